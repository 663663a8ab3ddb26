"""Benchmark (b): agreement with KernelBench's own harness on the same tasks and kernels (GPU host).

    python bench/evaluator_agreement.py KERNELBENCH_SRC OUT.json TASK:KERNEL[:BACKEND] ...

KERNELBENCH_SRC is a folder holding a copy of KernelBench's ``kernelbench`` package (eval.py, timing.py,
utils.py, dataset.py; never committed here). For each pair it runs KernelBench's eval_kernel_against_ref
(5 correctness trials, 100 cuda_event trials, its live eager reference time) and our harness in
kernelbench mode, side by side, and reports both verdicts and the speedup ratio.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
logger = logging.getLogger("bench.agreement")
# Imports of KernelBench modules that the evaluation path never calls (LLM clients, progress bars).
UNUSED_IMPORTS = {
    "litellm": ["completion"],
    "openai": ["OpenAI"],
    "dotenv": ["load_dotenv"],
    "tqdm": ["tqdm"],
    "requests": [],
}


class PlainModel:
    """Stands in for pydantic.BaseModel where pydantic is absent: keyword fields over class defaults."""

    def __init__(self, **fields):
        for name in getattr(type(self), "__annotations__", {}):
            default = getattr(type(self), name, None)
            setattr(self, name, dict(default) if isinstance(default, dict) else default)
        for name, value in fields.items():
            setattr(self, name, value)


def unused(*args, **kwargs) -> None:
    """What a stubbed import's names do when called at import time (e.g. load_dotenv): nothing."""


def provide_unused_imports() -> None:
    for name, attributes in UNUSED_IMPORTS.items():
        try:
            __import__(name)
        except ImportError:
            module = types.ModuleType(name)
            for attribute in attributes:
                setattr(module, attribute, unused)
            sys.modules[name] = module
    try:
        import pydantic  # noqa: F401
    except ImportError:
        sys.modules["pydantic"] = types.SimpleNamespace(BaseModel=PlainModel)


def kernelbench_verdict(kb_eval, task: Path, kernel: Path, backend: str) -> dict:
    import torch

    with tempfile.TemporaryDirectory() as build:
        result = kb_eval.eval_kernel_against_ref(
            original_model_src=task.read_text(),
            custom_model_src=kernel.read_text(),
            seed_num=42,
            num_correct_trials=5,
            num_perf_trials=100,
            measure_performance=True,
            timing_method="cuda_event",
            build_dir=build,
            device=torch.device("cuda:0"),
            backend=backend,
            precision=torch.float32,
        )
    if result is None:
        return {"compiled": False, "correct": False, "speedup": None, "kernel_ms": None, "reference_ms": None}
    speedup = result.ref_runtime / result.runtime if result.correctness and result.runtime > 0 else None
    return {
        "compiled": result.compiled,
        "correct": bool(result.correctness),
        "speedup": speedup,
        "kernel_ms": result.runtime if result.runtime > 0 else None,  # its mean, 3 significant digits
        "reference_ms": result.ref_runtime if result.ref_runtime > 0 else None,
    }


def our_verdict(task: Path, kernel: Path) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "result.json"
        command = [sys.executable, "-m", "evaluator", "run", "--task", str(task), "--kernel", str(kernel)]
        command += ["--device", "cuda", "--mode", "kernelbench", "--baselines", "eager", "--json", str(out)]
        subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
        result = json.loads(out.read_text())
    runtime, baseline = result.get("runtime_ms") or {}, (result.get("baseline_ms") or {}).get("eager") or {}
    return {
        "compiled": result["compiled"],
        "correct": result["correct"],
        "speedup": result["speedup"]["eager"],
        "kernel_ms": runtime.get("mean"),
        "reference_ms": baseline.get("mean"),
    }


def one(source: Path, task: Path, kernel: Path) -> int:
    """--one SOURCE TASK KERNEL: KernelBench's verdict on one pair, as a JSON line on stdout."""
    provide_unused_imports()
    sys.path.insert(0, str(source))
    import kernelbench.eval as kb_eval

    backend = "triton" if "triton" in kernel.read_text() else "cuda"
    verdict = kernelbench_verdict(kb_eval, task, kernel, backend)
    sys.stdout.write("\n" + json.dumps(verdict) + "\n")
    return 0


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if sys.argv[1] == "--one":
        return one(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
    source, out_path, pairs = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    provide_unused_imports()
    sys.path.insert(0, str(source))
    import kernelbench.eval as kb_eval

    rows = []
    for pair in pairs:
        task, kernel, *rest = pair.split(":")
        backend = rest[0] if rest else "cuda"
        theirs = kernelbench_verdict(kb_eval, ROOT / task, ROOT / kernel, backend)  # paths from the root
        ours = our_verdict(ROOT / task, ROOT / kernel)
        ratio = ours["speedup"] / theirs["speedup"] if ours["speedup"] and theirs["speedup"] else None
        rows.append({"task": task, "kernel": kernel, "kernelbench": theirs, "ours": ours, "ratio": ratio})
        out_path.write_text(json.dumps(rows, indent=1))  # after every pair: a cut run keeps what it measured
        logger.info(
            "%-60s KB correct=%s speedup=%s (ref %s, kernel %s ms)"
            " | ours correct=%s speedup=%s (ref %s, kernel %s ms) | ratio %s",
            f"{Path(task).stem} / {Path(kernel).stem}",
            theirs["correct"],
            theirs["speedup"] and round(theirs["speedup"], 4),
            theirs["reference_ms"],
            theirs["kernel_ms"],
            ours["correct"],
            ours["speedup"] and round(ours["speedup"], 4),
            ours["reference_ms"],
            ours["kernel_ms"],
            ratio and round(ratio, 4),
        )
    agree = sum(row["kernelbench"]["correct"] == row["ours"]["correct"] for row in rows)
    logger.info("same verdict on %d of %d; speedup ratios %s", agree, len(rows), [r["ratio"] for r in rows])
    return 0


if __name__ == "__main__":
    sys.exit(main())
