"""Cells in words: numbers as tables print them, and the provenance and conventions behind a value."""

import functools

from leaderboard.models import Aggregation, Baseline
from leaderboard.table import AGGREGATION_LABELS, BASELINE_LABELS, DENOMINATOR_LABELS, Candidate, Cell


def format_value(value: float | None, unit: str) -> str:
    """A number as tables print it: rates to two decimals at most, speedups to about four figures."""
    if value is None:
        return ""
    if unit == "%":
        return f"{value:.2f}".rstrip("0").rstrip(".")
    if unit == "fraction":
        return f"{value:.2f}"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.1f}"
    if magnitude >= 10:
        return f"{value:.2f}"
    if magnitude >= 0.1 or magnitude == 0:
        return f"{value:.3f}"
    return f"{value:.3g}"


@functools.lru_cache(maxsize=4096)
def source_text(title: str, arxiv_id: str, table: str) -> str:
    """A source as cells name it: title · arXiv id · table."""
    return " · ".join(part for part in (title, f"arXiv {arxiv_id}" if arxiv_id else "", table) if part)


def value_text(cell: Cell) -> str:
    return format_value(cell.value, cell.metric.unit)


def reported_text(cell: Cell) -> str:
    return format_value(cell.reported_value, cell.metric.unit)


def difference_text(cell: Cell) -> str:
    """Verified minus reported with its sign ('−20', '+1.5'), or '' when the cell lacks either."""
    diff = cell.difference
    if diff is None:
        return ""
    sign = "+" if diff > 0 else "−" if diff < 0 else "±"
    return sign + format_value(abs(diff), cell.metric.unit)


def describe_source(score: Candidate) -> str:
    text = source_text(score.source_title, score.source_arxiv_id, score.source_table)
    return text + (f" (as written: {score.as_written})" if score.as_written else "")


def describe_run(score: Candidate) -> str:
    where = f" on {score.run_hardware}" if score.run_hardware else ""
    cpu = " (CPU timing, not a GPU verification)" if score.run_device == "cpu" else ""
    harness = f", harness {score.harness_version}" if score.harness_version else ""
    suite = f", over the {score.suite} suite" if score.suite else ""
    lane = "; separate lane" if score.lane == "separate" else ""
    return f"evaluation run #{score.run_id}{where}{cpu}{harness}{suite}{lane}"


THRESHOLD_SIGNS = {">": ">", ">=": "≥"}
"""How a threshold reads in a text: the stored '>=' as '≥'."""


@functools.lru_cache(maxsize=1024)
def conventions_text(aggregation: str, threshold_op: str, denominator: str, baseline: str, n_tasks) -> str:
    """How a value was computed, in words, leaving out what its source does not state."""
    parts = [
        AGGREGATION_LABELS.get(aggregation, "") if aggregation != Aggregation.UNSTATED else "",
        f"counts speedup {THRESHOLD_SIGNS.get(threshold_op, threshold_op)} p" if threshold_op else "",
        f"over {DENOMINATOR_LABELS[denominator].lower()}" if denominator in DENOMINATOR_LABELS else "",
        "baseline not stated"
        if baseline == Baseline.UNSTATED
        else f"vs {BASELINE_LABELS.get(baseline, baseline)}",
        f"{n_tasks} tasks" if n_tasks else "",
    ]
    return " · ".join(part for part in parts if part)


def describe_conventions(score: Candidate) -> str:
    return conventions_text(
        score.aggregation, score.threshold_op, score.denominator, score.baseline, score.n_tasks
    )


def cell_title(cell: Cell) -> str:
    """The hover text of a cell: provenance, conventions and curation marks, one fact per line."""
    lines = [cell.metric.name]
    if cell.computed is not None:
        lines.append(
            f"Verified: computed at p = {cell.computed_p:g} from run #{cell.computed_run}'s per-task results"
        )
    elif cell.verified is not None:
        lines.append("Verified: " + describe_run(cell.verified))
        if cell.verified.ci_low is not None and cell.verified.ci_high is not None:
            low, high = (
                format_value(v, cell.metric.unit) for v in (cell.verified.ci_low, cell.verified.ci_high)
            )
            lines.append(f"95% bootstrap interval {low} to {high}")
    if cell.reported is not None:
        lines.append("Reported: " + describe_source(cell.reported))
        if cell.also_reported:
            lines.append(f"{cell.also_reported} more source(s) on the entry page")
    if cell.shown is not None:
        lines.append(describe_conventions(cell.shown))
    if cell.difference is not None:
        lines.append(f"Verified minus reported: {difference_text(cell)}")
    if cell.flagged:
        reasons = [c.state_reason for c in (cell.reported, cell.verified) if c and c.state_reason]
        lines.append("Flagged" + (f": {'; '.join(reasons)}" if reasons else ""))
    if cell.hacked and cell.value is None:
        lines.append("Marked hacked: never ranks")
    return "\n".join(line for line in lines if line)
