"""95 % intervals behind the leaderboard's numbers: Wilson's for proportions, the percentile bootstrap over
tasks for speedup aggregates (fixed seed, so the same data always gives the same interval)."""

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Z_95 = 1.959963984540054
"""The two-sided 95 % quantile of the standard normal distribution."""

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0

WILSON = "wilson"
BOOTSTRAP = "bootstrap"
NOT_AVAILABLE = "n/a"
"""The ci_method of a value without an interval: a reported number without per-task data."""


@dataclass(frozen=True)
class Interval:
    """A 95 % interval and how it was computed ('wilson' or 'bootstrap')."""

    low: float
    high: float
    method: str

    def overlaps(self, other: "Interval") -> bool:
        return self.low <= other.high and other.low <= self.high


def wilson(hits: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson's score interval of the proportion hits / n (as fractions); n must be positive."""
    if n <= 0 or not 0 <= hits <= n:
        raise ValueError(f"{hits} hits of {n} is not a proportion")
    share = hits / n
    z2 = z * z
    centre = (share + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(share * (1 - share) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def percent_interval(percent: float, n: int) -> Interval:
    """The Wilson interval of a rate given in percent of n tasks (the hits are percent × n / 100)."""
    hits = round(percent * n / 100)
    low, high = wilson(min(max(hits, 0), n), n)
    return Interval(100.0 * low, 100.0 * high, WILSON)


def bootstrap(
    values: Sequence[float],
    statistic: Callable[[Sequence[float]], float],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | tuple[None, None]:
    """A 95 % percentile bootstrap interval of a statistic, resampling tasks with replacement; (None, None)
    for fewer than two values."""
    if len(values) < 2:
        return None, None
    rng = random.Random(seed)
    stats = sorted(statistic(rng.choices(values, k=len(values))) for _ in range(resamples))
    return stats[int(0.025 * (resamples - 1))], stats[int(0.975 * (resamples - 1))]
