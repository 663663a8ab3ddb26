"""Benchmark (a): the same kernel evaluated N times; the spread max/min of its speedup (target <= 1.03).

python bench/evaluator_timing_spread.py TASK KERNEL [--device cuda] [--repeats 5] [--baselines eager]
                                       [--timing-budget-ms MS]

With --timing-budget-ms the runs use hardened timing's time budget: the spread it leaves is what decides
whether it may be turned on.
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


def evaluate(args: argparse.Namespace, out: Path) -> dict:
    command = [sys.executable, "-m", "evaluator", "run", "--task", args.task, "--kernel", args.kernel]
    command += ["--device", args.device, "--baselines", args.baselines, "--json", str(out)]
    if args.cache_dir:
        command += ["--cache-dir", args.cache_dir]
    if args.timing_budget_ms:
        command += ["--timing-budget-ms", str(args.timing_budget_ms)]
    subprocess.run(command, check=True, cwd=Path(__file__).resolve().parent.parent, capture_output=True)
    return json.loads(out.read_text())


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser()
    parser.add_argument("task")
    parser.add_argument("kernel")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baselines", default="eager")
    parser.add_argument("--cache-dir", default="")
    parser.add_argument("--timing-budget-ms", type=float, default=0.0)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for repeat in range(args.repeats):
            result = evaluate(args, Path(folder) / f"{repeat}.json")
            rows.append(result)
            logger.info(
                "run %d: correct=%s kernel median %.4f ms (IQR %.4f), eager median %.4f ms, speedup %.4f",
                repeat,
                result["correct"],
                result["runtime_ms"]["median"],
                result["runtime_ms"]["iqr"],
                result["baseline_ms"]["eager"]["median"],
                result["speedup"]["eager"],
            )
    speedups = [row["speedup"]["eager"] for row in rows]
    kernel_times = [row["runtime_ms"]["median"] for row in rows]
    logger.info(
        "speedup spread max/min %.4f over %d runs (kernel median spread %.4f)",
        max(speedups) / min(speedups),
        len(rows),
        max(kernel_times) / min(kernel_times),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
