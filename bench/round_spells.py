"""Did a slow spell fall on one side of hardened timing? Each round's median, in the order the rounds ran.

    python bench/round_spells.py RESULT.json|DIR [...] [--variant eager] [--threshold 1.05] [--json OUT]

Hardened timing alternates the kernel's process and the reference process round by round (round 0: the
candidate first, round 1: the reference first, and so on). A spell in which the host or the GPU runs slow
for longer than a round lands on whichever side is running then; with few rounds per side it moves the
speedup of an identity candidate far from 1. Per result this prints each round's median over its side's
fastest round, in the order they ran (C: the candidate, B: the baseline), and the spread (slowest round's
median over the fastest's) of each side; a result is unsteady where a side's spread passes --threshold.
It also gives the speedup over all calls (each side's median: the statistic until harness 2.10), over round
pairs (the median of each round's speedup: the statistic since 2.10 on a GPU, evaluator.stats), and of the
two sides' fastest rounds (each side's best round median), which a spell on one side does not move. The
summary counts the unsteady results and how many results each statistic puts within 3 % of 1 (for identity
candidates); run on results of any version, it replays the statistics on their samples.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: the bench package too
from bench.round_first_calls import report_out, result_files, round_sizes, rounds_of, variants  # noqa: E402
from evaluator.stats import round_pairs_speedup  # noqa: E402

logger = logging.getLogger("bench.round_spells")


def round_medians(samples: list[float], sizes: list[int]) -> list[float]:
    return [statistics.median(chunk) for chunk in rounds_of(samples, sizes)]


def in_order(candidate: list[float], baseline: list[float]) -> list[tuple[str, float]]:
    """Both sides' round medians in the order the rounds ran, each over its side's fastest round."""
    best = {"C": min(candidate), "B": min(baseline)}
    order = []
    for index in range(max(len(candidate), len(baseline))):
        turns = [("C", candidate), ("B", baseline)] if index % 2 == 0 else [("B", baseline), ("C", candidate)]
        order += [(side, medians[index] / best[side]) for side, medians in turns if index < len(medians)]
    return order


def spells(result: dict, variant: str) -> dict | None:
    """A result's rounds in order and each side's spread; None without the samples to tell."""
    samples = variants(result)
    if "candidate" not in samples or variant not in samples:
        return None
    sizes = round_sizes(result, len(samples["candidate"]), 20)
    medians = {"C": round_medians(samples["candidate"], sizes), "B": round_medians(samples[variant], sizes)}
    pairs = list(zip(*(rounds_of(samples[side], sizes) for side in ("candidate", variant)), strict=False))
    return {
        "speedup": (result.get("speedup") or {}).get(variant),
        "statistic": result.get("speedup_statistic"),
        "pooled_speedup": statistics.median(samples[variant]) / statistics.median(samples["candidate"]),
        "round_pairs_speedup": round_pairs_speedup(pairs),
        "best_round_speedup": min(medians["B"]) / min(medians["C"]),
        "rounds_per_side": len(sizes),
        "spread": {side: max(values) / min(values) for side, values in medians.items()},
        "order": " ".join(f"{side}{ratio:.2f}" for side, ratio in in_order(medians["C"], medians["B"])),
    }


def summary(per_file: dict[str, dict], threshold: float) -> dict:
    unsteady = {name: row for name, row in per_file.items() if max(row["spread"].values()) > threshold}
    within = {
        statistic: sum(
            row[statistic] is not None and abs(row[statistic] - 1) <= 0.03 for row in per_file.values()
        )
        for statistic in ("speedup", "pooled_speedup", "round_pairs_speedup", "best_round_speedup")
    }
    return {
        "results": len(per_file),
        "unsteady": len(unsteady),
        "threshold": threshold,
        "unsteady_speedups": {name: row["speedup"] for name, row in unsteady.items()},
        "unsteady_best_round_speedups": {
            name: round(row["best_round_speedup"], 4) for name, row in unsteady.items()
        },
        "within_3pct": within,
    }


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--variant", default="eager")
    parser.add_argument(
        "--threshold", type=float, default=1.05, help="a side's slowest round over its fastest"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    per_file = {}
    for path in result_files(args.paths):
        row = spells(json.loads(path.read_text()), args.variant)
        if row is not None:
            per_file[path.stem] = row
            logger.info(
                "%s speedup %s (%s; over all calls %.4f, round pairs %.4f, best rounds %.4f) rounds %d: %s",
                path.stem,
                row["speedup"],
                row["statistic"],
                row["pooled_speedup"],
                row["round_pairs_speedup"] or 0.0,
                row["best_round_speedup"],
                row["rounds_per_side"],
                row["order"],
            )
    return report_out(per_file, summary(per_file, args.threshold), "rounds", args.json)


if __name__ == "__main__":
    sys.exit(main())
