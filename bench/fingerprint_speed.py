"""Fingerprint cost on a GPU, side by side in one run: the torch reductions against the one-pass kernel.

    python bench/fingerprint_speed.py OUT.json [--sizes-mib 64,1024,2048] [--repeats 10] [--warps 4,8,16]
                                      [--other PATH]

For each size, a float32 CUDA tensor is fingerprinted the torch way and the one-pass way (after
prepare_one_pass, as a child of a large problem does); milliseconds per fingerprint (the mean over repeats,
synchronised), GB/s of the tensor's size, and whether the two fingerprints are `identical`. With --warps,
the one-pass kernel is run again at each number of warps per program, each reported against the harness's
own setting (evaluator.child.fingerprint_gpu.NUM_WARPS) and checked against the torch path's fingerprint.
With --other (another checkout, e.g. an earlier commit's `git worktree`), that tree's one-pass kernel is timed
beside this tree's, alternating call by call on the same tensor and weights: milliseconds of each, the
ratio (this tree's over the other's) and whether their five sums agree.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from evaluator.checks import identical  # noqa: E402
from evaluator.child import fingerprint as fp  # noqa: E402

logger = logging.getLogger("bench.fingerprint")


def per_call_ms(tensor: torch.Tensor, repeats: int) -> tuple[float, list[float]]:
    printed = fp.fingerprint(tensor, 7)  # warm: weights made, kernel compiled
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(repeats):
        printed = fp.fingerprint(tensor, 7)
    torch.cuda.synchronize()
    return (time.perf_counter() - started) * 1e3 / repeats, printed


def kernel_of(tree: Path):
    """evaluator/child/fingerprint_gpu.py of another checkout, loaded under a name of its own."""
    spec = importlib.util.spec_from_file_location(
        "other_fingerprint_gpu", tree / "evaluator" / "child" / "fingerprint_gpu.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def against_other(tensor: torch.Tensor, tree: Path, repeats: int) -> dict:
    """This tree's one-pass sums against the other tree's, call by call on the same data and weights."""
    from evaluator.child import fingerprint_gpu

    flat = tensor.reshape(-1)
    size = min(fp.BLOCK, flat.numel())
    weights = fp.projection_weights(7, size, -(-flat.numel() // size), str(flat.device))
    sync = torch.cuda.synchronize if flat.is_cuda else (lambda: None)
    kernels = {"this": fingerprint_gpu, "other": kernel_of(tree)}
    sums = {name: kernel.partial_sums(flat, 0, weights, size) for name, kernel in kernels.items()}  # warm
    spent = dict.fromkeys(kernels, 0.0)
    for _ in range(repeats):
        for name, kernel in kernels.items():
            sync()
            started = time.perf_counter()
            kernel.partial_sums(flat, 0, weights, size)
            sync()
            spent[name] += (time.perf_counter() - started) * 1e3 / repeats
    agree = bool(torch.allclose(sums["this"], sums["other"], rtol=1e-9, atol=1e-6))
    ratio = spent["this"] / spent["other"]
    logger.info("%5d MiB: this tree %.3f ms, the other %.3f ms, ratio %.3f, sums agree %s",
                tensor.numel() * 4 >> 20, spent["this"], spent["other"], ratio, agree)  # fmt: skip
    return {"this_ms": spent["this"], "other_ms": spent["other"], "ratio": ratio, "agree": agree}


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--sizes-mib", default="64,1024,2048")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warps", default="")
    parser.add_argument("--other", type=Path, default=None, help="another checkout's one-pass kernel beside")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes_mib.split(",")]
    tensors = {size: torch.randn((size << 20) // 4, device="cuda") for size in sizes}
    rows = {size: {"mib": size} for size in sizes}
    for size, tensor in tensors.items():
        rows[size]["torch_ms"], rows[size]["torch"] = per_call_ms(tensor, args.repeats)
    if not fp.prepare_one_pass("cuda"):
        logger.error("no Triton: the one-pass kernel cannot run here")
        return 1
    from evaluator.child import fingerprint_gpu

    torch_prints = {}
    for size, tensor in tensors.items():
        row = rows[size]
        row["one_pass_ms"], row["one_pass"] = per_call_ms(tensor, args.repeats)
        torch_prints[size] = row.pop("torch")
        row["identical"] = identical(torch_prints[size], row.pop("one_pass"))
        row["ratio"] = row["one_pass_ms"] / row["torch_ms"]
        row["one_pass_gb_s"] = (size << 20) / 1e9 / (row["one_pass_ms"] / 1e3)
        logger.info(
            "%5d MiB: torch %.2f ms, one pass %.2f ms (%.0f GB/s), ratio %.3f, identical %s",
            size, row["torch_ms"], row["one_pass_ms"], row["one_pass_gb_s"], row["ratio"], row["identical"],
        )  # fmt: skip
    for warps in [int(w) for w in args.warps.split(",")] if args.warps else []:
        fingerprint_gpu.NUM_WARPS = warps
        for size, tensor in tensors.items():
            ms, printed = per_call_ms(tensor, args.repeats)
            same = identical(printed, torch_prints[size])
            rows[size][f"warps_{warps}"] = {"ms": ms, "of_harness": ms / rows[size]["one_pass_ms"]}
            logger.info("%5d MiB, %2d warps: %.2f ms (%.3f of the harness's setting)", size, warps, ms,
                        ms / rows[size]["one_pass_ms"])  # fmt: skip
            rows[size]["identical"] = rows[size]["identical"] and same
    if args.other:
        for size, tensor in tensors.items():
            rows[size]["other"] = against_other(tensor, args.other, args.repeats)
    args.out.write_text(json.dumps(list(rows.values()), indent=1))
    agree = all(row.get("other", {}).get("agree", True) for row in rows.values())
    return 0 if agree and all(row["identical"] for row in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
