"""Eligibility and aggregation: the one definition of what ranks and how per-task results become scores.

Tables, the JSON API, CSV exports, charts and the verified-score writer all call this module, so a
number means the same thing wherever it is shown. Conventions follow KernelBench unless a score says
otherwise: fast_p counts speedup strictly greater than p over all tasks of the level (incorrect and
missing tasks count as misses); speedup aggregates are over correct kernels; the penalised geomean
counts an incorrect or missing task as 1x (the PyTorch fallback) and a correct one at its measured speedup,
below 1x too (not clamped to max(1, s) as one KernelBench fork does: a slow kernel shows as a regression).
Verified scores rank beside reported ones only from GPU runs over the ranking suite, KernelBench's own
problems, whole levels; another suite or CPU timing is a separate lane (`lane`).
"""

import bisect
import math
from collections.abc import Iterable, Sequence, Sized
from dataclasses import dataclass

# The choices' own modules, not the leaderboard.models package: the Score queryset reads RANKABLE_STATES.
from leaderboard import intervals
from leaderboard.intervals import Interval
from leaderboard.models.curation import CurationState, Lane
from leaderboard.models.metrics import Aggregation, Denominator, ThresholdOp
from tasks import suites

RANKABLE_STATES = (CurationState.VISIBLE, CurationState.FLAGGED)
"""Scores in these states rank; hidden and hacked ones are kept but never rank."""

RANKING_SUITE = suites.KERNELBENCH
"""The suite whose GPU-verified scores rank among reported ones: KernelBench's own problems at full size."""

FAST_P_THRESHOLDS = {"fast_1": 1.0, "fast_1_2": 1.2, "fast_1_5": 1.5, "fast_2": 2.0}
"""The fast_p metrics with their own catalogue column."""

FAST_P_MIN, FAST_P_MAX, FAST_P_STEP = 0.0, 3.0, 0.05
"""The range of p a viewer may choose."""

BOOTSTRAP_RESAMPLES = intervals.BOOTSTRAP_RESAMPLES


def is_rankable(state: str) -> bool:
    """Whether a score in this curation state may rank."""
    return state in RANKABLE_STATES


def separate_lane_reasons(suite: str, device: str) -> list[str]:
    """Why a run's verified scores cannot rank among full-suite results: over another suite than the
    ranking one (its levels are not KernelBench's), or timed on the CPU. None: they rank."""
    reasons = []
    if suite != RANKING_SUITE:
        reasons.append(f"verified over the {suite or 'unnamed'} suite, not the whole KernelBench level")
    if device == "cpu":
        reasons.append("CPU timing, not a GPU verification")
    return reasons


def lane(suite: str, device: str) -> str:
    """The lane of a run's verified scores: the ranking lane for a GPU run over the ranking suite, else
    the separate lane, which tables show only when asked."""
    return Lane.SEPARATE if separate_lane_reasons(suite, device) else Lane.RANKING


def fast_p_metric_id(p: float) -> str:
    """The metric id of fast_p: 1.0 → fast_1, 1.2 → fast_1_2, 0.85 → fast_0_85."""
    text = f"{p:.2f}".rstrip("0").rstrip(".")
    return "fast_" + text.replace(".", "_")


def parse_p(text: str | None, default: float = 1.0) -> float:
    """Read a p value from a URL parameter, snapped to the step and clamped to the allowed range."""
    try:
        value = float(text) if text not in (None, "") else default
    except ValueError:
        return default
    if not math.isfinite(value):
        return default
    value = min(max(value, FAST_P_MIN), FAST_P_MAX)
    return round(round(value / FAST_P_STEP) * FAST_P_STEP, 2)


@dataclass(frozen=True)
class TaskOutcome:
    """One task's verdict as aggregation needs it: correct or not, and the speedup if correct."""

    correct: bool
    speedup: float | None

    @property
    def counts(self) -> bool:
        """Correct with a measured, positive speedup (a correct kernel whose timing failed does not)."""
        return self.correct and self.speedup is not None and self.speedup > 0


@dataclass(frozen=True)
class Aggregate:
    """A computed metric value with the conventions it was computed under."""

    metric_id: str
    value: float | None
    aggregation: str
    denominator: str
    threshold_op: str = ThresholdOp.NONE
    ci_low: float | None = None
    ci_high: float | None = None

    def score_fields(self) -> dict:
        """The value and its conventions as a Score stores them (every writer of computed scores uses it)."""
        return {
            "value": self.value,
            "aggregation": self.aggregation,
            "threshold_op": self.threshold_op,
            "denominator": self.denominator,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
        }


def _correct_speedups(outcomes: Iterable[TaskOutcome]) -> list[float]:
    return [o.speedup for o in outcomes if o.counts]


def check_denominator(outcomes: Sequence[TaskOutcome], n_tasks: int) -> None:
    """A rate over n_tasks needs at least one task and no more outcomes than tasks."""
    if n_tasks <= 0:
        raise ValueError("n_tasks must be positive")
    if len(outcomes) > n_tasks:
        raise ValueError(f"{len(outcomes)} outcomes for {n_tasks} tasks: the denominator is too small")


def rate_denominator(level_tasks: int, outcomes: Sized) -> int:
    """The tasks a run's rates are over: every task of its suite's level, a missing one counting as a miss
    (KernelBench's fast_p), and never fewer than the run's results (a run re-verified after tasks left
    the suite still counts each of its results once)."""
    return max(level_tasks, len(outcomes))


def fast_p(outcomes: Sequence[TaskOutcome], p: float, n_tasks: int, op: str = ThresholdOp.GT) -> float:
    """Percent of all n_tasks that are correct and faster than p (strict > unless op is >=). At p = 0 it
    is the correct rate: every correct kernel beats 0x, also one whose timing failed."""
    check_denominator(outcomes, n_tasks)
    if p <= 0:
        return 100.0 * sum(1 for o in outcomes if o.correct) / n_tasks
    beats = (lambda s: s >= p) if op == ThresholdOp.GE else (lambda s: s > p)
    hits = sum(1 for s in _correct_speedups(outcomes) if beats(s))
    return 100.0 * hits / n_tasks


def geomean(values: Sequence[float]) -> float | None:
    """Geometric mean of positive values; None for an empty sequence."""
    if not values:
        return None
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def penalised_speedups(outcomes: Sequence[TaskOutcome], n_tasks: int) -> list[float]:
    """Per-task speedups over all n_tasks where incorrect and missing tasks count as 1x."""
    values = [o.speedup if o.counts else 1.0 for o in outcomes]
    return values + [1.0] * max(0, n_tasks - len(values))


def arithmetic_mean(values: Sequence[float]) -> float:
    """The mean, summed as value / n so that huge (absurd but finite) speedups cannot overflow."""
    return math.fsum(v / len(values) for v in values)


def median(values: Sequence[float]) -> float:
    """The median, the middle pair averaged as halves (no overflow, like arithmetic_mean)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return ordered[middle - 1] / 2 + ordered[middle] / 2


def bootstrap_ci(
    values: Sequence[float], statistic=geomean, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float] | tuple[None, None]:
    """A 95% percentile bootstrap interval of a statistic, resampling tasks with replacement."""
    return intervals.bootstrap(values, statistic, resamples, seed)


def rate_aggregate(metric_id: str, percent: float, n_tasks: int, op: str = ThresholdOp.NONE) -> Aggregate:
    """A rate over all n_tasks with its Wilson interval (in percent)."""
    interval = intervals.percent_interval(percent, n_tasks)
    return Aggregate(
        metric_id, percent, Aggregation.RATE, Denominator.ALL_TASKS, op, interval.low, interval.high
    )


def aggregate(outcomes: Sequence[TaskOutcome], n_tasks: int) -> dict[str, Aggregate]:
    """Every verified metric of one run, over n_tasks (the suite level's task count)."""
    speedups = _correct_speedups(outcomes)
    n_correct = sum(1 for o in outcomes if o.correct)
    result = {
        metric_id: rate_aggregate(metric_id, fast_p(outcomes, p, n_tasks), n_tasks, ThresholdOp.GT)
        for metric_id, p in FAST_P_THRESHOLDS.items()
    }
    result["correct_rate"] = rate_aggregate("correct_rate", 100.0 * n_correct / n_tasks, n_tasks)
    penalised = penalised_speedups(outcomes, n_tasks)
    low, high = bootstrap_ci(penalised)
    result["speedup_geomean_all"] = Aggregate(
        "speedup_geomean_all",
        geomean(penalised),
        Aggregation.GEOMETRIC,
        Denominator.ALL_TASKS,
        ci_low=low,
        ci_high=high,
    )
    if speedups:
        low, high = bootstrap_ci(speedups)
        result["speedup_geomean"] = Aggregate(
            "speedup_geomean",
            geomean(speedups),
            Aggregation.GEOMETRIC,
            Denominator.CORRECT_ONLY,
            ci_low=low,
            ci_high=high,
        )
        low, high = bootstrap_ci(speedups, arithmetic_mean)
        result["speedup_mean"] = Aggregate(
            "speedup_mean",
            arithmetic_mean(speedups),
            Aggregation.ARITHMETIC,
            Denominator.CORRECT_ONLY,
            ci_low=low,
            ci_high=high,
        )
        over_correct = {
            "speedup_median": (median(speedups), Aggregation.MEDIAN),
            "speedup_min": (min(speedups), Aggregation.MIN),
            "speedup_max": (max(speedups), Aggregation.MAX),
            "pct_faster": (100.0 * sum(s > 1 for s in speedups) / len(speedups), Aggregation.RATE),
            "pct_slower": (100.0 * sum(s < 1 for s in speedups) / len(speedups), Aggregation.RATE),
        }
        for metric_id, (value, how) in over_correct.items():
            result[metric_id] = Aggregate(metric_id, value, how, Denominator.CORRECT_ONLY)
    return result


def sort_key(value: float | None, descending: bool) -> tuple[int, float]:
    """Sort key that puts missing values last in either direction."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return (1, 0.0)
    return (0, -value if descending else value)


# --- Tables: which value a cell shows, how rows are ordered and ranked ------------------------------------

REPORTED_FAST_P = {0.0: "correct_rate", **{p: metric_id for metric_id, p in FAST_P_THRESHOLDS.items()}}
"""The reported metric that holds fast_p at a given p: fast_0 is the correct rate (KernelBench)."""


def has_hack_flag(flags) -> bool:
    """Whether the harness flagged a kernel as a hack (a flag with severity 'hack')."""
    return any(isinstance(flag, dict) and flag.get("severity") == "hack" for flag in flags or ())


def task_outcome(correct: bool, speedup: float | None, flags=()) -> TaskOutcome:
    """A stored per-task result as aggregation reads it: a kernel flagged as a hack counts as incorrect."""
    return TaskOutcome(correct=correct and not has_hack_flag(flags), speedup=speedup)


def fast_p_grid() -> list[float]:
    """Every p a viewer may choose, from FAST_P_MIN to FAST_P_MAX in FAST_P_STEP steps."""
    steps = round((FAST_P_MAX - FAST_P_MIN) / FAST_P_STEP)
    return [round(FAST_P_MIN + i * FAST_P_STEP, 2) for i in range(steps + 1)]


def reported_fast_p_metric(p: float) -> str | None:
    """The metric id whose reported value is fast_p at this p, or None when sources report no such p."""
    return REPORTED_FAST_P.get(round(p, 2))


def fast_p_curve(outcomes: Sequence[TaskOutcome], n_tasks: int, ps: Sequence[float]) -> list[float]:
    """fast_p at each p of ps (KernelBench's strict >, over all n_tasks): the same numbers as fast_p,
    from one sort of the speedups instead of one pass per p."""
    check_denominator(outcomes, n_tasks)
    speedups = sorted(_correct_speedups(outcomes))
    n_correct = sum(1 for o in outcomes if o.correct)
    return [
        100.0 * (n_correct if p <= 0 else len(speedups) - bisect.bisect_right(speedups, p)) / n_tasks
        for p in ps
    ]


def latest_verified_run(run_ids: Iterable[int | None]) -> int | None:
    """The run whose verified scores a row shows: the newest (highest id) among those given."""
    return max((run_id for run_id in run_ids if run_id is not None), default=None)


def first_reported(score_ids: Iterable[int]) -> int | None:
    """Of several reported scores for one cell, the one shown: the first stored (the others stay listed)."""
    return min(score_ids, default=None)


def headline(verified: float | None, reported: float | None) -> float | None:
    """The value a cell ranks by: the verified one when the row has both, since we measured it ourselves."""
    return verified if verified is not None else reported


def difference(verified: float | None, reported: float | None) -> float | None:
    """Verified minus reported, when a cell has both."""
    if verified is None or reported is None:
        return None
    return verified - reported


def is_missing(value) -> bool:
    """Whether a sort value counts as missing: None, NaN or an empty string."""
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def order_by_value(items: Sequence, value_of, descending: bool) -> list:
    """Items sorted by value_of(item) in either direction, missing values always last; stable for ties."""
    present, missing = [], []
    for item in items:
        value = value_of(item)
        if is_missing(value):
            missing.append(item)
        else:
            present.append((value, item))
    present.sort(key=lambda pair: pair[0], reverse=descending)
    return [item for _, item in present] + missing


def competition_ranks(values: Sequence) -> list[int | None]:
    """Ranks of already-ordered values, ties sharing a rank (1, 2, 2, 4); missing values get None."""
    ranks: list[int | None] = []
    previous = object()
    for position, value in enumerate(values, start=1):
        if is_missing(value):
            ranks.append(None)
            continue
        ranks.append(ranks[-1] if value == previous and ranks else position)
        previous = value
    return ranks


# --- Uncertainty: the interval of a shown value, and ranks not separable at 95 % -------------------------

RATES_OVER_ALL_TASKS = (*REPORTED_FAST_P.values(),)
"""Rates over every task of the level (fast_p, the correct rate): Wilson intervals over n tasks."""


def value_interval(
    metric_id: str,
    value: float | None,
    n_tasks: int | None,
    stored: tuple[float | None, float | None],
    per_task: bool,
) -> Interval | None:
    """The 95 % interval of a shown value. A value with per-task data behind it (a verified run, or reported
    per-task results imported from eval_results.json) has one: fast_p and the correct rate a Wilson interval
    over the n tasks of the level, geomean and mean speedups the stored bootstrap over tasks. A reported
    number without per-task data has none (None: shown as 'n/a', never as 0)."""
    if value is None or not per_task:
        return None
    if metric_id in RATES_OVER_ALL_TASKS or metric_id.startswith("fast_"):
        return intervals.percent_interval(value, n_tasks) if n_tasks else None
    low, high = stored
    if low is None or high is None:
        return None
    return Interval(low, high, intervals.BOOTSTRAP)


def inseparable_from_previous(ordered: Sequence[Interval | None]) -> list[bool]:
    """Ties at 95 %: an ordered row is marked as not separable from the row ranked just above it when both
    have intervals and they overlap (overlapping 95 % intervals: the order of the two may be chance).
    Rows without an interval (reported numbers) are never marked."""
    marks = [False] * len(ordered)
    for index in range(1, len(ordered)):
        above, here = ordered[index - 1], ordered[index]
        marks[index] = above is not None and here is not None and here.overlaps(above)
    return marks
