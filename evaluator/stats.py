"""Summary statistics of timing samples (pure Python) and the speedups derived from them."""

from __future__ import annotations

import math
import statistics
from typing import Any


def quantile(sorted_samples: list[float], fraction: float) -> float:
    """Linear-interpolated quantile of already sorted samples."""
    position = (len(sorted_samples) - 1) * fraction
    low = math.floor(position)
    high = math.ceil(position)
    weight = position - low
    return sorted_samples[low] * (1 - weight) + sorted_samples[high] * weight


def summarize(samples: list[float]) -> dict[str, Any]:
    """STATS of the result schema: median, mean, std (population), IQR, min, max, n and the samples."""
    if not samples:
        raise ValueError("no timing samples to summarise")
    ordered = sorted(samples)
    return {
        "median": statistics.median(ordered),
        "mean": statistics.fmean(ordered),
        "std": statistics.pstdev(ordered),
        "iqr": quantile(ordered, 0.75) - quantile(ordered, 0.25),
        "min": ordered[0],
        "max": ordered[-1],
        "n": len(ordered),
        "samples": [round(value, 6) for value in samples],
    }


ROUND_PAIRS = "round_pairs"  # hardened, GPU: the median of the rounds' speedups (round_pairs_speedup)


def round_pairs_speedup(pairs: list[tuple[list[float], list[float]]]) -> float | None:
    """The median, over rounds, of (the baseline's median in the round) / (the kernel's median in the round
    next to it); None without a pair. The two sides' rounds alternate, so a slow spell of the host (a
    launch-bound model on a virtual machine's core: seconds at 1.3-1.7x) mostly falls on both rounds of a
    pair and drops out of its ratio, where over all calls it counts on whichever side it met."""
    ratios = [
        statistics.median(baseline) / statistics.median(kernel)
        for kernel, baseline in pairs
        if kernel and baseline and statistics.median(kernel) > 0
    ]
    if not ratios:
        return None
    ratio = statistics.median(ratios)
    return ratio if math.isfinite(ratio) else None


def speedup(baseline: dict[str, Any] | None, kernel: dict[str, Any] | None, statistic: str) -> float | None:
    """Baseline time over kernel time with the given statistic; None when either is missing or not finite."""
    if not baseline or not kernel or kernel[statistic] <= 0:
        return None
    ratio = baseline[statistic] / kernel[statistic]
    return ratio if math.isfinite(ratio) else None
