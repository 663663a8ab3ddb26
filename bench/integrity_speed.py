"""The kernel's-process integrity work, this tree against another checkout, side by side in one run.

    python bench/integrity_speed.py [--other PATH] [--runs 3] [--checks 15]

Each run starts a fresh interpreter per tree (alternating, this tree first), imports torch and
torch._dynamo as the kernel's process does, and times: a whole snapshot (`take`), its refresh where the tree
has one (`refresh`: what the import pays when the snapshot was taken at boot), the median of `--checks` full
checks without the operator tables (`full`: after the import, the trials and every round) and of 5 with
them (`full_ops`: after the probe). Prints each run's figures (ms) and, with --other, the median ratio of
this tree's to the other's for each.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
from pathlib import Path

logger = logging.getLogger("bench.integrity_speed")
ROOT = Path(__file__).resolve().parent.parent

MEASURE = """
import json, statistics, sys, time
import torch, torch._dynamo
from evaluator.child import integrity

def ms(work):
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1e3

found = {}
holder = []
found["take"] = ms(lambda: holder.append(integrity.Snapshot.take()))
snapshot = holder[0]
found["full"] = statistics.median(ms(lambda: snapshot.full(operators=False)) for _ in range(int(sys.argv[1])))
found["full_ops"] = statistics.median(ms(lambda: snapshot.full(operators=True)) for _ in range(5))
if hasattr(snapshot, "refresh"):
    found["refresh"] = ms(lambda: snapshot.refresh({}))
print(json.dumps(found))
"""


def measure(tree: Path, checks: int) -> dict[str, float]:
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    completed = subprocess.run(
        [sys.executable, "-c", MEASURE, str(checks)],
        cwd=tree,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--other", type=Path, help="a checkout of another version (e.g. a git worktree)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--checks", type=int, default=15)
    arguments = parser.parse_args()
    trees = {"this": ROOT} | ({"other": arguments.other.resolve()} if arguments.other else {})
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for run in range(arguments.runs):
        for name, tree in trees.items():
            found = measure(tree, arguments.checks)
            results[name].append(found)
            logger.info(
                "run %d %s: %s", run + 1, name, {key: round(value, 1) for key, value in found.items()}
            )
    if arguments.other:
        for key in ("take", "full", "full_ops"):
            ratios = [
                mine[key] / theirs[key]
                for mine, theirs in zip(results["this"], results["other"], strict=True)
            ]
            logger.info(
                "%s: this / other, median of %d runs: %.2f", key, len(ratios), statistics.median(ratios)
            )
        if all("refresh" in found for found in results["this"]):  # what each tree's import pays
            pairs = zip(results["this"], results["other"], strict=True)
            ratios = [mine["refresh"] / theirs["take"] for mine, theirs in pairs]
            logger.info(
                "the import's snapshot, this tree's refresh / the other's take: %.2f",
                statistics.median(ratios),
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
