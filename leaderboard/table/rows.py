"""A table's rows: one per entry, its cells filled from the scores read and its fast_p computed."""

import datetime
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from django.urls import reverse

from leaderboard import scoring
from leaderboard.models import Aggregation, CurationState, Lane, Level, MethodKind, Metric
from leaderboard.table.cells import BASELINE_LABELS, Cell, build_cell
from leaderboard.table.fetch import Candidate
from leaderboard.table.query import FAST_P_KEY, TableQuery

KIND_LABELS = dict(MethodKind.choices)

TASK_COUNT_CARRIER = "correct_rate"
"""A metric every verified run stores: ordering reads the run's task count (its n_tasks) from it."""


@dataclass(slots=True)
class Row:
    """One entry of the table."""

    entry_id: int
    label: str
    date: datetime.date | None
    entry_baseline: str
    entry_n_tasks: int | None
    task_subset: str
    mode: str
    data_source: str
    reproduce: bool
    hardware: str | None
    method_name: str
    method_slug: str
    method_kind: str
    backbone: str
    agent_models: str
    verified_run: int | None
    in_view: bool = True
    run_withheld: str | None = None
    paired_entry: int | None = None
    per_task_reported: bool = False
    verified_n_tasks: int | None = None
    cells: dict[str, Cell] = field(default_factory=dict)
    fast_p: Cell | None = None
    rank: int | None = None
    tied: bool = False
    curve: list[float] | None = None
    info: list[tuple[str, str]] = field(default_factory=list)
    line: list[Cell] = field(default_factory=list)
    html: str = ""

    @property
    def name(self) -> str:
        return self.label or self.method_name

    @property
    def is_verified(self) -> bool:
        return self.verified_run is not None

    @property
    def cpu_only(self) -> bool:
        """Whether the row's verified values come from a CPU-only run (CPU timing, not a GPU verification)."""
        return any(
            cell.verified is not None and cell.verified.run_device == "cpu" for cell in self.cells.values()
        )

    @property
    def separate_lane(self) -> Candidate | None:
        """One of the row's verified scores when they come from the separate lane (another suite or CPU
        timing), else None."""
        return next(
            (
                cell.verified
                for cell in self.cells.values()
                if cell.verified is not None and cell.verified.lane == Lane.SEPARATE
            ),
            None,
        )

    @property
    def lane(self) -> str:
        return Lane.SEPARATE if self.separate_lane is not None else Lane.RANKING

    @property
    def suite(self) -> str:
        """The task suite of the row's verified values ('' for a reported row)."""
        return next((cell.verified.suite for cell in self.cells.values() if cell.verified is not None), "")

    @property
    def baseline(self) -> str:
        """The baseline the row's values are measured against (the verified one for a verified row)."""
        shown = {cell.baseline for cell in self.cells.values() if cell.baseline}
        return shown.pop() if len(shown) == 1 else self.entry_baseline

    @property
    def baseline_label(self) -> str:
        return BASELINE_LABELS.get(self.baseline, self.baseline)

    @property
    def n_tasks(self) -> int | None:
        return self.entry_n_tasks or self.verified_n_tasks

    @property
    def kind_label(self) -> str:
        return KIND_LABELS.get(self.method_kind, "")

    @property
    def date_label(self) -> str:
        return self.date.strftime("%Y.%m") if self.date else ""

    @property
    def url(self) -> str:
        return reverse("leaderboard:entry", args=[self.entry_id])

    @property
    def method_url(self) -> str:
        return reverse("leaderboard:method", args=[self.method_slug])

    def info_text(self, key: str) -> str:
        """An info column as printed ('' when missing)."""
        if key == "hardware":
            return self.hardware or ""
        if key == "date":
            return self.date_label
        if key == "baseline":
            return self.baseline_label
        if key == "n_tasks":
            return "" if self.n_tasks is None else str(self.n_tasks)
        if key == "kind":
            return self.kind_label
        return self.name

    def interval_of(self, key: str) -> scoring.Interval | None:
        """The 95 % interval of the value this row sorts by under a metric column key (None: none)."""
        cell = self.fast_p if key == FAST_P_KEY else self.cells.get(key)
        return cell.ci if cell is not None else None

    def value_of(self, key: str):
        """The value this row sorts by under a column key (None when missing)."""
        if key == FAST_P_KEY:
            return self.fast_p.value if self.fast_p else None
        if key == "name":
            return self.name.casefold()
        if key == "hardware":
            return self.hardware.casefold() if self.hardware else None
        if key == "date":
            return self.date
        if key == "baseline":
            return self.baseline_label.casefold() or None
        if key == "n_tasks":
            return self.n_tasks
        if key == "kind":
            return self.kind_label.casefold() or None
        cell = self.cells.get(key)
        return cell.value if cell else None


def row_matches(row: Row, query: TableQuery) -> bool:
    """The entry-level filters: method kind, date range and text search on method, label and backbone."""
    if query.kind and row.method_kind != query.kind:
        return False
    if (query.date_from or query.date_to) and row.date is None:
        return False
    if query.date_from and row.date < query.date_from:
        return False
    if query.date_to and row.date > query.date_to:
        return False
    if query.q:
        haystack = " ".join((row.method_name, row.label, row.backbone, row.agent_models)).casefold()
        return query.q.casefold() in haystack
    return True


def fill_cells(
    rows: Iterable[Row], candidates: list[Candidate], metrics: dict[str, Metric], ids, every: bool = True
) -> None:
    """Give each row a cell for each metric id, built from the candidates read for it (with every=False,
    only where there are candidates: ordering reads a missing cell as a missing value)."""
    grouped: dict[tuple[int, str], list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        grouped[(candidate.entry_id, candidate.metric_id)].append(candidate)
    for row in rows:
        for metric_id in ids:
            found = with_paired(grouped, row, metric_id)
            if not found and not every:
                continue
            row.cells[metric_id] = cell = build_cell(metrics[metric_id], found, row.verified_run)
            cell.paired = cell.reported is not None and cell.reported.entry_id != row.entry_id
            if row.verified_n_tasks is None and row.verified_run is not None:
                row.verified_n_tasks = next(
                    (c.n_tasks for c in found if c.run_id == row.verified_run and c.n_tasks), None
                )


def with_paired(grouped: dict, row: Row, metric_id: str) -> list[Candidate]:
    """A row's candidates for a metric; a verified value without a reported one of the entry's own gets
    the reported scores of the paired entry beside it (leaderboard.pairing), so the gap shows."""
    found = grouped.get((row.entry_id, metric_id), [])
    if row.paired_entry is None or not any(c.verified for c in found) or any(not c.verified for c in found):
        return found
    return found + [c for c in grouped.get((row.paired_entry, metric_id), []) if not c.verified]


def paired_ids(rows: Iterable[Row]) -> set[int]:
    """The reported entries the rows are paired with (their scores are read with the rows')."""
    return {row.paired_entry for row in rows if row.paired_entry is not None}


def fill_fast_p(
    rows: Iterable[Row],
    outcomes: dict,
    metrics: dict[str, Metric],
    p: float,
    level: Level,
    reported_outcomes: dict | None = None,
) -> None:
    """The fast_p cell at p: computed for verified rows from their per-task results, and for reported rows
    from imported per-task results (labelled reported), else as reported.

    A computed value carries the run's own verified score at that p, or else its correct-rate score, so
    that the run's curation state, baseline and task count show with it."""
    reported_id = scoring.reported_fast_p_metric(p)
    metric = fast_p_metric(p, metrics)
    for row in rows:
        stored = row.cells.get(reported_id) if reported_id else None
        run_outcomes = outcomes.get(row.verified_run)
        per_task = (reported_outcomes or {}).get(row.entry_id) if run_outcomes is None else None
        if per_task is not None and reported_fast_p(row, per_task, metric, level):
            continue
        if run_outcomes is None:
            hacked = row.run_withheld == CurationState.HACKED
            if row.run_withheld and stored is not None and stored.verified is not None:
                # nothing of a withheld run ranks at any p, its stored correct rate at p = 0 included
                stored = replace(stored, verified=None) if stored.reported is not None else None
            row.fast_p = replace(stored, metric=metric) if stored else Cell(metric=metric, hacked=hacked)
            continue
        carrier = row.cells.get(TASK_COUNT_CARRIER)
        n_tasks = run_denominator(row, run_outcomes, level)
        computed = {
            "verified": (stored and stored.verified) or (carrier and carrier.verified),
            "computed": scoring.fast_p(run_outcomes, p, n_tasks),
            "computed_p": p,
            "computed_run": row.verified_run,
            "computed_n": n_tasks,
        }
        row.fast_p = replace(stored, metric=metric, **computed) if stored else Cell(metric=metric, **computed)


def reported_fast_p(row: Row, per_task: list, metric: Metric, level: Level) -> bool:
    """Give a reported row fast_p at any p from its imported per-task results, carried by its stored
    correct rate (source, conventions); False when that score is not among those read."""
    carrier = row.cells.get(TASK_COUNT_CARRIER)
    if carrier is None or carrier.reported is None:
        return False
    n_tasks = scoring.rate_denominator(row.entry_n_tasks or level.task_count, per_task)
    value = scoring.fast_p(per_task, metric.threshold, n_tasks)
    row.fast_p = Cell(
        metric=metric,
        reported=carrier.reported,
        computed_reported=value,
        computed_p=metric.threshold,
        computed_n=n_tasks,
    )
    return True


def per_task_reported_rows(rows: Iterable[Row]) -> set[int]:
    """Reported rows with imported per-task results (their fast_p is computed at any p)."""
    return {row.entry_id for row in rows if row.per_task_reported and row.verified_run is None}


def run_denominator(row: Row, run_outcomes: list, level: Level) -> int:
    """The tasks a verified row's rates are over: its run's task count, the level's when unknown, and
    never fewer than the run's results."""
    return scoring.rate_denominator(row.verified_n_tasks or level.task_count, run_outcomes)


def fast_p_metric(p: float, metrics: dict[str, Metric]) -> Metric:
    """A catalogue-like metric for fast_p at any p: not stored, computed per table."""
    return Metric(
        id=FAST_P_KEY,
        name=f"fast_p at p = {p:g}",
        short_name=f"fast_{p:g}",
        unit="%",
        direction="higher",
        aggregation=Aggregation.RATE,
        threshold=p,
        description=f"Share of tasks that are correct and more than {p:g}× faster than the baseline. "
        "Verified rows: computed from per-task results. Reported rows: only where a source reports this p.",
    )


def attach_curves(rows: Iterable[Row], outcomes: dict, level: Level) -> None:
    """fast_p over the whole p range for verified rows (the curve chart), from their per-task results."""
    grid = scoring.fast_p_grid()
    for row in rows:
        run_outcomes = outcomes.get(row.verified_run)
        if run_outcomes is not None:
            row.curve = scoring.fast_p_curve(run_outcomes, run_denominator(row, run_outcomes, level), grid)


def computable_runs(rows: Iterable[Row]) -> set[int]:
    """The verified runs whose per-task results may give computed values (none that curation withholds)."""
    return {row.verified_run for row in rows if row.verified_run and not row.run_withheld}
