"""Is the first timed call of each round slower than the rest, and on which side? From result JSON files.

    python bench/round_first_calls.py RESULT.json|DIR [...] [--round-calls 20] [--json OUT]

Hardened timing alternates the two processes round by round; a cost that only a round's first call pays
(device memory given back between rounds, a cold cache after the other process ran) shows as that call's
time over the median of the round's other calls. Each variant's samples are in call order, so the round
boundaries come from the result's timing.round_sizes (each round's calls), else every timing.round_calls
samples, else every --round-calls samples. Prints per
file and variant the median of first-call / rest-of-round ratios, and over all files the median and largest
of those ratios per side: candidate (the kernel's process) and baseline (the reference process).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
from pathlib import Path

logger = logging.getLogger("bench.round_first_calls")


def round_sizes(result: dict, count: int, default_round_calls: int) -> list[int]:
    """Each round's calls: as the result records them, else rounds of its (or the default) fixed size."""
    timing = result.get("timing") or {}
    if timing.get("round_sizes"):
        return list(timing["round_sizes"])
    size = timing.get("round_calls") or default_round_calls
    return [min(size, count - start) for start in range(0, count, size)]


def rounds_of(samples: list[float], sizes: list[int]) -> list[list[float]]:
    """The samples cut into their rounds, in order."""
    rounds, start = [], 0
    for size in sizes:
        rounds.append(samples[start : start + size])
        start += size
    return [chunk for chunk in rounds if chunk]


def round_ratios(samples: list[float], sizes: list[int]) -> list[float]:
    """First call over the median of the other calls, for every round after the first (warmed up)."""
    ratios = []
    for chunk in rounds_of(samples, sizes)[1:]:
        rest = chunk[1:]
        if rest and statistics.median(rest) > 0:
            ratios.append(chunk[0] / statistics.median(rest))
    return ratios


def variants(result: dict) -> dict[str, list[float]]:
    """Samples per variant: "candidate" and the baselines by name."""
    found = {"candidate": (result.get("runtime_ms") or {}).get("samples") or []}
    for name, stats in (result.get("baseline_ms") or {}).items():
        found[name] = (stats or {}).get("samples") or []
    return {name: samples for name, samples in found.items() if samples}


def first_call_ratios(result: dict, default_round_calls: int) -> dict[str, float]:
    """Per variant, the median first-call ratio over this result's rounds (one round only: left out)."""
    medians = {}
    for name, samples in variants(result).items():
        ratios = round_ratios(samples, round_sizes(result, len(samples), default_round_calls))
        if ratios:
            medians[name] = statistics.median(ratios)
    return medians


def result_files(paths: list[Path]) -> list[Path]:
    files = []
    for path in paths:
        files += sorted(path.glob("*.json")) if path.is_dir() else [path]
    return [path for path in files if path.name != "environment.json"]


def summary(per_file: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    sides: dict[str, list[float]] = {"candidate": [], "baseline": []}
    for medians in per_file.values():
        for name, ratio in medians.items():
            sides["candidate" if name == "candidate" else "baseline"].append(ratio)
    return {
        side: {"results": len(ratios), "median": statistics.median(ratios), "max": max(ratios)}
        for side, ratios in sides.items()
        if ratios
    }


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--round-calls", type=int, default=20, help="when a result does not record it")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    per_file = {}
    for path in result_files(args.paths):
        medians = first_call_ratios(json.loads(path.read_text()), args.round_calls)
        if medians:
            per_file[str(path)] = medians
            logger.info("%s %s", path.name, " ".join(f"{k}={v:.3f}" for k, v in medians.items()))
    return report_out(per_file, summary(per_file), "first call of a round over the rest", args.json)


def report_out(per_file: dict, totals: dict, label: str, path: Path | None) -> int:
    """The summary logged under label and the whole report written to path (if given); 0 when some file
    had rounds to tell about."""
    logger.info("%s: %s", label, json.dumps(totals))
    if path:
        path.write_text(json.dumps({"files": per_file, "summary": totals}, indent=1))
    return 0 if per_file else 1


if __name__ == "__main__":
    sys.exit(main())
