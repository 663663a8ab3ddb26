"""Benchmark (a): the same kernel evaluated N times; the spread max/min of its speedup (target <= 1.03).

python bench/evaluator_timing_spread.py TASK KERNEL [--device cuda] [--repeats 5] [--baselines eager]
                                       [--timing-budget-ms MS] [--round-calls 20,5]

KERNEL may be `identity`: the task's own Model as the candidate (`class ModelNew(Model): pass`), whose
speedup is 1 but for noise. With --timing-budget-ms the runs use hardened timing's time budget: the spread it
leaves is what decides whether it may be turned on. --round-calls names round sizes to compare (calls per
variant before the two processes alternate): each repeat runs every size in turn, so the sizes share the
machine's slow and fast spells, and each size gets its own spread.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import tempfile
from pathlib import Path

logger = logging.getLogger("bench.spread")
IDENTITY = "\n\nclass ModelNew(Model):\n    pass\n"


def evaluate(args: argparse.Namespace, kernel: str, round_calls: str, out: Path) -> dict:
    command = [sys.executable, "-m", "evaluator", "run", "--task", args.task, "--kernel", kernel]
    command += ["--device", args.device, "--baselines", args.baselines, "--json", str(out)]
    if args.cache_dir:
        command += ["--cache-dir", args.cache_dir]
    if args.timing_budget_ms:
        command += ["--timing-budget-ms", str(args.timing_budget_ms)]
    if round_calls and round_calls != "time":  # "time": the harness's own rounds, sized by time on a GPU
        command += ["--round-calls", round_calls]
    subprocess.run(command, check=True, cwd=Path(__file__).resolve().parent.parent, capture_output=True)
    return json.loads(out.read_text())


def candidate(args: argparse.Namespace, folder: Path) -> str:
    """The kernel file to evaluate: the one given, or the task's identity candidate written to folder."""
    if args.kernel != "identity":
        return args.kernel
    path = folder / "identity_kernel.py"
    path.write_text(Path(args.task).read_text(encoding="utf-8") + IDENTITY, encoding="utf-8")
    return str(path)


def spread(label: str, rows: list[dict]) -> dict:
    speedups = [row["speedup"]["eager"] for row in rows]
    kernel_times = [row["runtime_ms"]["median"] for row in rows]
    summary = {
        "round_calls": label,
        "runs": len(rows),
        "speedups": [round(value, 4) for value in speedups],
        "speedup_spread": max(speedups) / min(speedups),
        "kernel_median_spread": max(kernel_times) / min(kernel_times),
    }
    logger.info(
        "rounds of %s: speedup spread max/min %.4f over %d runs (kernel median spread %.4f), speedups %s",
        label, summary["speedup_spread"], len(rows), summary["kernel_median_spread"], summary["speedups"],
    )  # fmt: skip
    return summary


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser()
    parser.add_argument("task")
    parser.add_argument("kernel", help="a kernel file, or `identity`")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baselines", default="eager")
    parser.add_argument("--cache-dir", default="")
    parser.add_argument("--timing-budget-ms", type=float, default=0.0)
    parser.add_argument(
        "--round-calls", default="", help="comma-separated round sizes to compare (`time`: sized by time)"
    )
    parser.add_argument("--json", type=Path, help="write the spreads here")
    args = parser.parse_args()
    sizes = [size for size in args.round_calls.split(",") if size] or [""]
    rows: dict[str, list[dict]] = {size: [] for size in sizes}
    with tempfile.TemporaryDirectory() as folder:
        kernel = candidate(args, Path(folder))
        for repeat in range(args.repeats):
            for size in sizes:
                result = evaluate(args, kernel, size, Path(folder) / f"{repeat}-{size}.json")
                rows[size].append(result)
                logger.info(
                    "run %d, rounds of %s: correct=%s kernel median %.4f ms (IQR %.4f), "
                    "eager median %.4f ms, speedup %.4f",
                    repeat, size or "default", result["correct"], result["runtime_ms"]["median"],
                    result["runtime_ms"]["iqr"], result["baseline_ms"]["eager"]["median"],
                    result["speedup"]["eager"],
                )  # fmt: skip
    summaries = [spread(size or "default", found) for size, found in rows.items()]
    if args.json:
        args.json.write_text(json.dumps(summaries, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
