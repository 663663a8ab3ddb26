"""GPU acceptance on KernelBench's own problems: the identity candidate through the hardened harness.

    python bench/evaluator_acceptance.py KERNELBENCH OUT_DIR [--per-level 20] [--largest 8]
        [--problems 1/19,2/4,3/21-50] [--kernelbench-src .kb] [--compare 30] [--baselines eager]
        [--budget-s 560] [--timing-budget-ms 1000]

KERNELBENCH is a KernelBench work tree (KernelBench/level1..3/*.py; never committed here). For each chosen
problem the candidate is the task's own Model (`class ModelNew(Model): pass`), so the right verdict is
"correct" (or the degenerate mark), never harness_error, and the eager speedup must be 1 within timing noise.
The chosen problems are those --problems names (3/21-50 names a range), first and in its order, then the
first --per-level of each level plus the --largest by input size (sized on the meta device, without
allocating), taken level by level in turn (1/1, 2/1, 3/1, 1/2, …) so that a run cut short still covers
every level. The batch runs once, as a worker runs it; beside it, KernelBench's own eval_kernel_against_ref
(5 correctness trials, 100 cuda_event trials) runs on the first --compare of the problems ours judged, each
in its own process. With --budget-s the batch is stopped at two thirds of it, or at all of it when nothing
is to be compared (problems it did not reach are listed as "not run", never as failures), and the
comparison ends with it.
--timing-budget-ms is hardened timing's time budget (as a worker's EVALUATOR_TIMING_BUDGET_MS).
--skip names earlier runs' acceptance.json files (comma-separated): problems judged there are left out, so
successive device calls cover the 250 problems; bench/acceptance_merge.py makes one table of them.
Writes acceptance.json and acceptance.md in OUT_DIR after every stage.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script from bench/: the project's packages too
logger = logging.getLogger("bench.acceptance")
GiB = 1 << 30
IDENTITY = "\n\nclass ModelNew(Model):\n    pass\n"
NOT_RUN = "not run"  # the batch was stopped before it reached the problem


def problems(checkout: Path) -> dict[str, Path]:
    """'L/P' -> problem file (an absolute path), for levels 1 to 3."""
    checkout = checkout.resolve()
    found = {}
    for level in (1, 2, 3):
        for path in sorted((checkout / "KernelBench" / f"level{level}").glob("*.py")):
            number = path.name.split("_", 1)[0]
            if number.isdigit():
                found[f"{level}/{int(number)}"] = path
    return found


def input_bytes(path: Path) -> int:
    """The bytes of one input set, from get_inputs() on the meta device (nothing is allocated)."""
    import torch

    spec = importlib.util.spec_from_file_location(f"kb_size_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        with torch.device("meta"):
            values = module.get_inputs()
    except Exception:  # noqa: BLE001 - a problem that cannot be sized on meta counts as small
        return 0
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def problem_key(name: str) -> tuple[int, ...]:
    """'level/problem' as numbers, for sorting (2/10 after 2/9)."""
    return tuple(int(part) for part in name.split("/"))


def choose(found: dict[str, Path], per_level: int, largest: int, extra: list[str]) -> tuple[list[str], dict]:
    chosen = [
        name
        for level in (1, 2, 3)
        for name in sorted((n for n in found if n.startswith(f"{level}/")), key=problem_key)[:per_level]
    ]
    sizes = {name: input_bytes(path) for name, path in found.items()}
    chosen += sorted(found, key=lambda name: -sizes[name])[:largest]
    named = [name for name in extra if name in found]
    return run_order(chosen + named, named), sizes


def named_problems(text: str) -> list[str]:
    """--problems: "1/19,2/4" and ranges "1/25-37" (level 1, problems 25 to 37), in the order given."""
    names = []
    for item in filter(None, text.split(",")):
        level, _, numbers = item.partition("/")
        first, _, last = numbers.partition("-")
        names += [f"{level}/{number}" for number in range(int(first), int(last or first) + 1)]
    return names


def run_order(chosen: list[str], named: list[str]) -> list[str]:
    """The problems named (--problems) first, in their order, so a budget that runs out never skips them;
    then the n-th problem of each level, level by level."""
    rest = sorted(set(chosen) - set(named), key=problem_key)
    rank = Counter()
    turns = {}
    for name in rest:
        level = name.split("/")[0]
        turns[name] = (rank[level], int(level))
        rank[level] += 1
    return list(dict.fromkeys(named)) + sorted(rest, key=lambda name: turns[name])


def judged(reports: str) -> set[str]:
    """The problems an earlier run's acceptance.json gave a verdict (those it did not reach are not)."""
    done = set()
    for path in filter(None, reports.split(",")):
        rows = json.loads(Path(path).read_text())["rows"]
        done |= {row["problem"] for row in rows if row["verdict"] != NOT_RUN}
    return done


def write_kernels(found: dict[str, Path], chosen: list[str], folder: Path) -> list[dict]:
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for name in chosen:
        level, number = name.split("/")
        kernel = folder / f"level_{level}_problem_{number}_sample_0_kernel.py"
        kernel.write_text(found[name].read_text() + IDENTITY)
        entries.append(
            {"id": f"L{level}_{number}", "task_path": str(found[name]), "kernel_path": str(kernel)}
        )
    return entries


SAMPLE_EVERY_S = 2.0  # each sample starts nvidia-smi on the host whose launch-bound kernels are being timed


class GpuSampler(threading.Thread):
    """nvidia-smi's memory.used every SAMPLE_EVERY_S: (seconds since start, MiB) pairs. A process's cached
    blocks stay reserved for the rest of its kernel, so a peak lasts long enough to be seen."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples: list[tuple[float, int]] = []
        self.running, self.start_time = True, time.monotonic()

    def run(self) -> None:
        while self.running and shutil.which("nvidia-smi"):
            done = subprocess.run(
                ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "--id=0"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if done.returncode == 0 and done.stdout.strip().isdigit():
                self.samples.append((time.monotonic() - self.start_time, int(done.stdout.strip())))
            time.sleep(SAMPLE_EVERY_S)


def run_ours(
    entries: list[dict], folder: Path, options: dict, device: str, deadline_s: float | None
) -> tuple[dict, float, GpuSampler]:
    from evaluator.manifest import batch_command, write_manifest

    options = {**options, "run_timeout": 300}
    manifest = write_manifest(folder / "manifest.json", device, "hardened", entries, **options)
    sampler = GpuSampler()
    sampler.start()
    started = time.monotonic()
    command = batch_command(manifest, folder / "out", cache_dir=folder / "cache")
    with open(folder / "batch.log", "w") as log:
        trace = {"EVALUATOR_TRACE": str(folder / "batch.trace")}  # every message, with the GPU peaks
        batch = subprocess.Popen(
            command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **trace},
        )  # fmt: skip
        try:
            batch.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            logger.info("the batch reached its %.0f s share of the budget: stopped", deadline_s)
            os.killpg(batch.pid, signal.SIGKILL)
            batch.wait()
    wall = time.monotonic() - started
    sampler.running = False
    results = {}
    for path in (folder / "out").glob("*.json"):
        try:
            results[path.stem] = json.loads(path.read_text())
        except ValueError:  # a result being written when the batch was stopped
            continue
    results.pop("environment", None)
    return results, wall, sampler


def memory(resources: dict) -> tuple[int, int, int]:
    """A result's peak GPU (reserved) and host bytes, both processes summed, and the bound on the GPU's:
    each process one input set, one output, the weights and the forward's intermediates, plus 2 GiB."""
    peaks = resources.get("peak") or {}
    gpu = sum(part.get("gpu_reserved_bytes", 0) for part in peaks.values())
    host = sum(part.get("host_bytes", 0) for part in peaks.values())
    held = sum(resources.get(key) or 0 for key in ("input_bytes", "output_bytes", "parameter_bytes"))
    return gpu, host, 2 * (held + (resources.get("scratch_bytes") or 0)) + 2 * GiB


def gpu_by_process(resources: dict) -> str:
    """Each process's peak GPU memory, reserved (allocated), GiB: where a peak over the bound comes from
    (reserved far above allocated is the allocator's cache and fragmentation, not the harness's tensors)."""
    peaks = resources.get("peak") or {}
    parts = []
    for role in ("kernel", "reference"):
        part = peaks.get(role) or {}
        if "gpu_reserved_bytes" in part:
            allocated = part.get("gpu_allocated_bytes")
            held = f" ({allocated / GiB:.1f})" if allocated is not None else ""
            parts.append(f"{part['gpu_reserved_bytes'] / GiB:.1f}{held}")
    return " / ".join(parts)


def row_of(name: str, entry: dict, result: dict, sizes: dict) -> dict:
    error = result.get("error") or {}
    eager = (result.get("baseline_ms") or {}).get("eager") or {}
    resources = result.get("resources") or {}
    gpu, host, bound = memory(resources)
    return {
        "problem": name,
        "task_path": entry["task_path"],
        "kernel_path": entry["kernel_path"],
        "task": result["task"]["name"],
        "input_bytes": (result.get("resources") or {}).get("input_bytes", sizes.get(name)),
        "output_bytes": (result.get("resources") or {}).get("output_bytes"),
        "verdict": "correct" if result["correct"] else error.get("kind"),
        "message": ((error.get("message") or "").splitlines() or [""])[0][:200],
        "degenerate": result.get("degenerate"),
        "flags": [flag["code"] for flag in result["flags"] if flag["severity"] != "info"],
        "eager_ms": eager.get("median"),
        "speedup": (result.get("speedup") or {}).get("eager"),
        "peak_gpu_reserved_gib": round(gpu / GiB, 3),
        "gpu_by_process": gpu_by_process(resources),
        "peak_host_gib": round(host / GiB, 3),
        "scratch_gib": round((resources.get("scratch_bytes") or 0) / GiB, 3),
        "bound_gib": round(bound / GiB, 3),
        "seconds": (result.get("durations_s") or {}).get("total"),
    }


def kernelbench_side(source: Path, task: Path, kernel: Path, timeout: float) -> dict:
    """KernelBench's eval_kernel_against_ref on one pair, in a process of its own."""
    driver = ROOT / "bench" / "evaluator_agreement.py"
    command = [sys.executable, str(driver), "--one", str(source), str(task), str(kernel)]
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:  # no verdict: the budget ran out, not the kernel
        return {"stopped": f"stopped at its {timeout:.0f} s limit", "correct": None, "speedup": None}
    except (ValueError, IndexError) as error:
        return {"compiled": False, "correct": False, "speedup": None, "error": repr(error)[:300]}


def judged_by_kernelbench(row: dict) -> bool:
    """Whether KernelBench's harness gave this row a verdict (a run stopped by its time limit gave none)."""
    theirs = row.get("kernelbench") or {}
    return bool(theirs) and not stopped(theirs)


def stopped(theirs: dict) -> bool:
    """A KernelBench run cut by its time limit (older reports: the TimeoutExpired it was written as)."""
    return bool(theirs.get("stopped")) or "TimeoutExpired" in str(theirs.get("error", ""))


def kernelbench_cell(theirs: dict) -> str:
    if not theirs:
        return ""
    if stopped(theirs):
        return "stopped by its time limit"
    return f"{'correct' if theirs.get('correct') else 'not correct'} {theirs.get('speedup') or ''}"


def summary(rows: list[dict]) -> dict:
    run = [row for row in rows if row["verdict"] != NOT_RUN]
    rows, not_run = run, len(rows) - len(run)
    timed = [row for row in rows if row["verdict"] == "correct" and (row["eager_ms"] or 0) >= 0.1]
    within = [row for row in timed if 0.97 <= row["speedup"] <= 1.03]
    compared = [row for row in rows if judged_by_kernelbench(row)]
    agree = [row for row in compared if (row["kernelbench"]["correct"] == (row["verdict"] == "correct"))]
    ratios = [row["ratio"] for row in compared if row.get("ratio")]
    return {
        "problems": len(rows),
        "not_run": not_run,
        "harness_errors": sum(row["verdict"] == "harness_error" for row in rows),
        "verdicts": {
            kind: sum(row["verdict"] == kind for row in rows) for kind in {row["verdict"] for row in rows}
        },
        "flags": dict(Counter(code for row in rows for code in row["flags"])),
        "timed_at_least_0.1ms": len(timed),
        "eager_speedup_within_3pct": len(within),
        "compared_with_kernelbench": len(compared),
        "same_verdict": len(agree),
        "speedup_ratio_within_3pct": sum(0.97 <= r <= 1.03 for r in ratios),
        "ratio_median": statistics.median(ratios) if ratios else None,
        "gpu_peak_over_bound": [
            row["problem"]
            for row in rows
            if row.get("bound_gib") and row["peak_gpu_reserved_gib"] > row["bound_gib"]
        ],
    }


def write_report(folder: Path, rows: list[dict], extra: dict) -> None:
    report = {"summary": summary(rows), **extra, "rows": rows}
    (folder / "acceptance.json").write_text(json.dumps(report, indent=1))
    lines = [
        "| problem | task | in GB | out GB | verdict | flags | degenerate | eager ms | speedup | KernelBench "
        "| ratio | peak GPU GiB | candidate / reference GiB | forward scratch GiB | bound GiB "
        "| peak host GiB | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        kb = kernelbench_cell(row.get("kernelbench") or {})
        cells = [
            row["problem"], row["task"], gb(row["input_bytes"]), gb(row["output_bytes"]), row["verdict"],
            " ".join(row["flags"]), "yes" if row["degenerate"] else "", number(row["eager_ms"]),
            number(row["speedup"]), kb,
            number(row.get("ratio")), row["peak_gpu_reserved_gib"], row["gpu_by_process"], row["scratch_gib"],
            row["bound_gib"],
            row["peak_host_gib"], number(row["seconds"]),
        ]  # fmt: skip
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    (folder / "acceptance.md").write_text(
        "\n".join(lines) + "\n\n" + json.dumps(report["summary"], indent=1) + "\n"
    )


def gb(value) -> str:
    return f"{value / 1e9:.2f}" if value else ""


def number(value) -> str:
    return f"{value:.4g}" if isinstance(value, int | float) else ""


def batch_share(budget_s: float | None, comparing: bool) -> float | None:
    """Seconds of the budget for our batch: two thirds beside KernelBench's harness, else all of it."""
    if not budget_s:
        return None
    return budget_s * 2 / 3 if comparing else budget_s


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    parser = argparse.ArgumentParser()
    parser.add_argument("kernelbench", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--per-level", type=int, default=20)
    parser.add_argument("--largest", type=int, default=8)
    parser.add_argument("--problems", default="1/19")
    parser.add_argument("--kernelbench-src", type=Path)
    parser.add_argument("--compare", type=int, default=30)
    parser.add_argument("--baselines", default="eager")
    parser.add_argument("--device", default="cuda", help="cpu: a smoke test of the bench on tiny problems")
    parser.add_argument("--budget-s", type=float, help="wall time (the batch: 2/3; all without --compare)")
    parser.add_argument("--timing-budget-ms", type=float, help="hardened timing's time budget per variant")
    parser.add_argument("--skip", default="", help="earlier acceptance.json files: their problems are done")
    args = parser.parse_args()
    ends = time.monotonic() + args.budget_s if args.budget_s else None
    done = judged(args.skip)
    found = {name: path for name, path in problems(args.kernelbench).items() if name not in done}
    chosen, sizes = choose(found, args.per_level, args.largest, named_problems(args.problems))
    logger.info("%d problems: %s", len(chosen), " ".join(chosen))
    entries = write_kernels(found, chosen, args.out / "kernels")
    share = batch_share(args.budget_s, bool(args.kernelbench_src and args.compare))
    options = {"baselines": args.baselines.split(","), "timing_budget_ms": args.timing_budget_ms}
    results, wall, sampler = run_ours(entries, args.out, options, args.device, share)
    missing = {"task": {"name": "?"}, "correct": False, "error": {"kind": NOT_RUN}, "flags": []}
    rows = [
        row_of(name, entry, results.get(entry["id"], missing), sizes)
        for name, entry in zip(chosen, entries, strict=True)
    ]
    extra = {
        "wall_s": wall,
        "gpu_memory_used_peak_mib": max((mib for _, mib in sampler.samples), default=None),
    }
    write_report(args.out, rows, extra)
    logger.info("ours: %s in %.0f s", summary(rows), wall)
    if args.kernelbench_src and args.compare:
        for row in [row for row in rows if row["verdict"] != NOT_RUN][: args.compare]:
            left = ends - time.monotonic() if ends else 600
            if left < 20:
                logger.info("the budget is spent: the comparison stops here")
                break
            task, kernel = Path(row["task_path"]), Path(row["kernel_path"])
            row["kernelbench"] = kernelbench_side(args.kernelbench_src, task, kernel, min(600, left))
            theirs, ours = row["kernelbench"].get("speedup"), row["speedup"]
            row["ratio"] = ours / theirs if ours and theirs else None
            write_report(args.out, rows, extra)
        logger.info("with KernelBench: %s", summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
