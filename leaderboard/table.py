"""Leaderboard tables: the one builder of rows, cells, ordering and pages for HTML, JSON, CSV and charts.

A table is built in two phases so that a level of a thousand entries costs the same six queries as a level
of ten: phase A reads, for every entry of the level, only what ordering needs (the sort column and,
in the fast_p view, the per-task results of verified runs); phase B reads every score with its provenance
for the rows of the requested page only. Which value a cell shows and how rows are ordered and ranked is
decided by `leaderboard.scoring`; this module only gathers the data and applies those rules.

Queries per table: the level, the metric catalogue (with which metrics the level has data for), the
entries (with whether each has scores in the view and its newest verified run), the sort column's scores,
the page's scores, and the per-task results of the verified runs involved: at most six.
"""

import datetime
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from urllib.parse import urlencode

from django.db.models import Exists, OuterRef, Q, Subquery
from django.urls import reverse

from leaderboard import scoring, table_cache
from leaderboard.importers.almanac import METRIC_COLUMNS as ALMANAC_COLUMNS
from leaderboard.models import (
    Aggregation,
    Baseline,
    CurationState,
    DataVersion,
    Denominator,
    Entry,
    Level,
    MethodKind,
    Metric,
    Provenance,
    Score,
    TaskResult,
)

DEFAULT_PER_PAGE = 50
MAX_PER_PAGE = 1000
TOP_SELECTED = 5
"""Rows drawn in the fast_p curve when the viewer has not picked any."""


# --- views and columns -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    """A named set of columns with a default order."""

    slug: str
    title: str
    metric_ids: tuple[str, ...]
    info: tuple[str, ...]
    default_sorts: tuple[str, ...]
    computed_fast_p: bool = False
    description: str = ""


SPEEDUP_COLUMNS = (
    "speedup_geomean",
    "speedup_geomean_all",
    "speedup_mean",
    "speedup_median",
    "speedup_min",
    "speedup_max",
    "pct_faster",
    "pct_slower",
    "correct_rate",
)

VIEWS = {
    "fast1": View(
        "fast1",
        "Fast1",
        ALMANAC_COLUMNS + ("speedup_geomean_all",),
        ("hardware", "date"),
        ("-fast_1", "-speedup_geomean", "-speedup_mean", "-speedup_median", "-correct_rate", "-success_rate"),
        description="Every column the level has data for, ranked by Fast1.",
    ),
    "fastp": View(
        "fastp",
        "fast_p",
        ("fast_1", "fast_1_2", "fast_1_5", "fast_2", "correct_rate"),
        ("hardware", "baseline", "n_tasks"),
        ("-fast_p",),
        computed_fast_p=True,
        description="fast_p at the chosen p: computed from per-task results for verified entries, "
        "as reported otherwise (only at the p values a source reports).",
    ),
    "geomean": View(
        "geomean",
        "Geomean",
        SPEEDUP_COLUMNS,
        ("hardware", "n_tasks", "baseline"),
        ("-speedup_geomean", "-speedup_geomean_all", "-speedup_mean", "-speedup_median"),
        description="Speedup aggregates with their type: A arithmetic, G geometric mean.",
    ),
}
DEFAULT_VIEW = "fast1"

INFO_COLUMNS = {
    "name": "Method",
    "hardware": "Hardware",
    "date": "Date",
    "baseline": "Baseline",
    "n_tasks": "Tasks",
    "kind": "Kind",
}
"""Columns that are not metrics, sortable by their text or number."""

FAST_P_KEY = "fast_p"


def sortable_keys(view: View) -> set[str]:
    keys = {"name", *view.info, *view.metric_ids}
    if view.computed_fast_p:
        keys.add(FAST_P_KEY)
    return keys


# --- the query: view, sort, p, filters, page --------------------------------------------------------------


@dataclass(frozen=True)
class TableQuery:
    """Everything the URL can say about a table; links reproduce the table from it."""

    view: str = DEFAULT_VIEW
    sort: str = ""
    p: float = 1.0
    hardware: str = ""
    baseline: str = ""
    provenance: str = ""
    kind: str = ""
    date_from: datetime.date | None = None
    date_to: datetime.date | None = None
    q: str = ""
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE
    compare: tuple[int, ...] = ()

    @property
    def filtered(self) -> bool:
        return any(
            (self.hardware, self.baseline, self.provenance, self.kind, self.date_from, self.date_to, self.q)
        )

    @property
    def verified_baseline(self) -> str:
        """The baseline of the verified scores shown: the chosen one, PyTorch eager by default."""
        return self.baseline or Baseline.EAGER

    def params(self, **changes) -> dict[str, str | list[str]]:
        """The URL parameters that differ from the defaults, after applying changes."""
        query = replace(self, **changes)
        params: dict[str, str | list[str]] = {}
        if query.view != DEFAULT_VIEW:
            params["view"] = query.view
        if query.sort:
            params["sort"] = query.sort
        if query.view == "fastp" or query.p != 1.0:
            params["p"] = f"{query.p:g}"
        for name in ("hardware", "baseline", "provenance", "kind", "q"):
            if getattr(query, name):
                params[name] = getattr(query, name)
        if query.date_from:
            params["from"] = query.date_from.strftime("%Y-%m")
        if query.date_to:
            params["to"] = query.date_to.strftime("%Y-%m")
        if query.page != 1:
            params["page"] = str(query.page)
        if query.per_page != DEFAULT_PER_PAGE:
            params["per_page"] = str(query.per_page)
        if query.compare:
            params["compare"] = [str(pk) for pk in query.compare]
        return params

    def urlencode(self, **changes) -> str:
        """'?…' for a link to this table with changes, or '' when everything is default."""
        text = urlencode(self.params(**changes), doseq=True)
        return f"?{text}" if text else ""


# --- what is read from the database ----------------------------------------------------------------------

LIGHT_FIELDS = (
    "id",
    "entry_id",
    "metric_id",
    "value",
    "provenance",
    "state",
    "baseline",
    "run_id",
    "n_tasks",
    "aggregation",
)
DETAIL_FIELDS = (
    "threshold_op",
    "denominator",
    "source_table",
    "as_written",
    "state_reason",
    "notes",
    "harness_version",
    "ci_low",
    "ci_high",
    "run__hardware__name",
    "run__device",
    "source_id",
    "source__title",
    "source__kind",
    "source__arxiv_id",
    "source__url",
)


@dataclass(slots=True)
class Candidate:
    """One stored score as a table reads it; the detail fields are read for the page's rows only."""

    id: int
    entry_id: int
    metric_id: str
    value: float
    provenance: str
    state: str
    baseline: str
    run_id: int | None
    n_tasks: int | None
    aggregation: str
    threshold_op: str = ""
    denominator: str = ""
    source_table: str = ""
    as_written: str = ""
    state_reason: str = ""
    notes: str = ""
    harness_version: str = ""
    ci_low: float | None = None
    ci_high: float | None = None
    run_hardware: str = ""
    run_device: str = ""
    source_id: int | None = None
    source_title: str = ""
    source_kind: str = ""
    source_arxiv_id: str = ""
    source_url: str = ""

    @property
    def rankable(self) -> bool:
        return scoring.is_rankable(self.state)

    @property
    def verified(self) -> bool:
        return self.provenance == Provenance.VERIFIED

    @property
    def source_link(self) -> str:
        return self.source_url or (
            f"https://arxiv.org/abs/{self.source_arxiv_id}" if self.source_arxiv_id else ""
        )

    @property
    def run_url(self) -> str:
        return reverse("submissions:run", args=[self.run_id]) if self.run_id else ""


def score_conditions(query: TableQuery) -> Q:
    """Which stored scores a table may show under the query's filters (hidden ones never)."""
    condition = ~Q(state=CurationState.HIDDEN)
    if query.provenance:
        condition &= Q(provenance=query.provenance)
    if query.baseline:
        condition &= Q(baseline=query.baseline)
    else:
        condition &= Q(provenance=Provenance.REPORTED) | Q(baseline=Baseline.EAGER)
    if query.hardware:
        condition &= Q(provenance=Provenance.REPORTED, entry__hardware__name=query.hardware) | Q(
            provenance=Provenance.VERIFIED, run__hardware__name=query.hardware
        )
    return condition


def fetch_level(number: int) -> Level:
    """The level, annotated with the current data version (one query for both)."""
    version = DataVersion.objects.filter(pk=1).values("value")[:1]
    level = (
        Level.objects.select_related("benchmark")
        .annotate(data_version=Subquery(version))
        .filter(number=number)
        .order_by("benchmark_id")
        .first()
    )
    if level is None:
        raise Level.DoesNotExist(f"There is no level {number}.")
    return level


def fetch_metrics(level: Level, query: TableQuery) -> dict[str, Metric]:
    """The metric catalogue, each with `present`: whether the level has a score for it under the filters."""
    present = Score.objects.filter(score_conditions(query), metric=OuterRef("pk"), entry__level=level)
    return {metric.id: metric for metric in Metric.objects.annotate(present=Exists(present))}


ENTRY_FIELDS = (
    "id",
    "label",
    "date",
    "baseline",
    "n_tasks",
    "task_subset",
    "mode",
    "data_source",
    "reproduce",
    "hardware__name",
    "method__name",
    "method__slug",
    "method__kind",
    "method__backbone",
    "method__agent_models",
)
"""An entry's fields as a table row holds them, in the order of Row's first fields."""


def fetch_entries(level: Level, query: TableQuery, view: View) -> list[tuple]:
    """The level's entries: their fields, whether each has scores in the view, its newest verified run,
    and whether curation withholds that run's per-task results (see `withheld_state`)."""
    own = Score.objects.filter(score_conditions(query), entry=OuterRef("pk"))
    newest = own.filter(provenance=Provenance.VERIFIED, state__in=scoring.RANKABLE_STATES).order_by("-run_id")
    rows = (
        Entry.objects.filter(level=level)
        .annotate(
            verified_run=Subquery(newest.values("run_id")[:1]),
            in_view=Exists(own.filter(metric_id__in=view.metric_ids)),
            run_withheld=withheld_state(query),
        )
        .order_by()
        .values_list(*ENTRY_FIELDS, "verified_run", "in_view", "run_withheld")
    )
    return list(rows)


def withheld_state(query: TableQuery) -> Subquery:
    """'hacked' or 'hidden' when a curator marked one of the verified run's fast_p scores so: the values
    computed from its per-task results (fast_p at any p, the curve) then stay out as well."""
    curated = Score.objects.filter(
        run_id=OuterRef("verified_run"),
        provenance=Provenance.VERIFIED,
        baseline=query.verified_baseline,
        metric_id__in=scoring.REPORTED_FAST_P.values(),
        state__in=(CurationState.HACKED, CurationState.HIDDEN),
    )
    return Subquery(curated.order_by("state").values("state")[:1])  # 'hacked' sorts first


def fetch_candidates(filter_q: Q, query: TableQuery, detail: bool) -> list[Candidate]:
    fields = LIGHT_FIELDS + DETAIL_FIELDS if detail else LIGHT_FIELDS
    rows = Score.objects.filter(score_conditions(query), filter_q).order_by().values_list(*fields)
    return [Candidate(*row) for row in rows]


def fetch_outcomes(run_ids: Iterable[int], baseline: str) -> dict[int, list[scoring.TaskOutcome]]:
    """Per-task outcomes (sample 0) of these runs against a baseline, as scoring reads them."""
    run_ids = list(run_ids)
    if not run_ids:
        return {}
    speedup = "speedup_compile" if baseline == Baseline.COMPILE else "speedup_eager"
    rows = (
        TaskResult.objects.filter(run_id__in=run_ids, kernel__sample=0)
        .order_by()
        .values_list("run_id", "correct", speedup, "flags")
    )
    outcomes: dict[int, list[scoring.TaskOutcome]] = defaultdict(list)
    for run_id, correct, value, flags in rows:
        outcomes[run_id].append(scoring.task_outcome(correct, value, flags))
    return outcomes


# --- cells and rows --------------------------------------------------------------------------------------


@dataclass(slots=True)
class Cell:
    """One metric of one row: the value it ranks by and where that value comes from."""

    metric: Metric
    reported: Candidate | None = None
    verified: Candidate | None = None
    also_reported: int = 0
    hacked: bool = False
    computed: float | None = None
    computed_p: float | None = None
    computed_run: int | None = None
    verified_value: float | None = field(init=False)
    reported_value: float | None = field(init=False)
    value: float | None = field(init=False)
    provenance: str = field(init=False)
    flagged: bool = field(init=False)

    def __post_init__(self):
        if self.computed is not None:
            self.verified_value = self.computed
        else:
            self.verified_value = self.verified.value if self.verified else None
        self.reported_value = self.reported.value if self.reported else None
        self.value = scoring.headline(self.verified_value, self.reported_value)
        if self.verified_value is not None:
            self.provenance = Provenance.VERIFIED
        else:
            self.provenance = Provenance.REPORTED if self.reported else ""
        self.flagged = (self.reported is not None and self.reported.state == CurationState.FLAGGED) or (
            self.verified is not None and self.verified.state == CurationState.FLAGGED
        )

    @property
    def raw(self) -> str:
        """The value at full precision, as data attributes and the CSV carry it."""
        return "" if self.value is None else repr(self.value)

    @property
    def shown(self) -> Candidate | None:
        """The stored score behind the headline value (for a computed fast_p, the stored one at that p)."""
        return self.verified if self.verified_value is not None else self.reported

    @property
    def run_id(self) -> int | None:
        if self.verified_value is None:
            return None
        return self.computed_run or (self.verified.run_id if self.verified else None)

    @property
    def difference(self) -> float | None:
        return scoring.difference(self.verified_value, self.reported_value)

    @property
    def aggregation_tag(self) -> str:
        """'A' or 'G' in the column that mixes arithmetic and geometric means (mean speedup)."""
        shown = self.shown
        if shown is None or self.metric.id != "speedup_mean":
            return ""
        return {Aggregation.ARITHMETIC: "A", Aggregation.GEOMETRIC: "G"}.get(shown.aggregation, "?")

    @property
    def baseline(self) -> str:
        shown = self.shown
        return shown.baseline if shown else ""

    @property
    def baseline_tag(self) -> str:
        """A short mark when the value is not measured against PyTorch eager."""
        return {Baseline.COMPILE: "compile", Baseline.NAIVE_CUDA: "naive CUDA", Baseline.UNSTATED: "?"}.get(
            self.baseline, ""
        )

    @property
    def threshold_op(self) -> str:
        if self.computed is not None:
            return scoring.ThresholdOp.GT
        shown = self.shown
        return shown.threshold_op if shown else ""

    @property
    def empty(self) -> bool:
        """Nothing to show: no rankable value and no hacked mark."""
        return self.value is None and not self.hacked

    @property
    def link(self) -> str:
        """The run a verified value comes from, or the source of a reported one."""
        if self.run_id:
            return reverse("submissions:run", args=[self.run_id])
        return self.reported.source_link if self.reported else ""


AGGREGATION_LABELS = dict(Aggregation.choices)
BASELINE_LABELS = dict(Baseline.choices)
DENOMINATOR_LABELS = {key: label for key, label in Denominator.choices if key != Denominator.UNSTATED}
KIND_LABELS = dict(MethodKind.choices)


def build_cell(metric: Metric, candidates: list[Candidate], verified_run: int | None) -> Cell:
    """Choose what a cell shows from the scores stored for it (eligibility rules from scoring)."""
    if not candidates:
        return Cell(metric)
    if len(candidates) == 1:  # the common case, without the general path's bookkeeping
        only = candidates[0]
        if only.state not in scoring.RANKABLE_STATES:
            return Cell(metric, hacked=only.state == CurationState.HACKED)
        if only.provenance == Provenance.REPORTED:
            return Cell(metric, reported=only)
        return Cell(metric, verified=only if only.run_id == verified_run else None)
    reported, verified = [], None
    for candidate in candidates:
        if candidate.state not in scoring.RANKABLE_STATES:
            continue
        if candidate.provenance == Provenance.REPORTED:
            reported.append(candidate)
        elif candidate.run_id == verified_run and verified is None:
            verified = candidate
    shown_reported = None
    if reported:
        chosen = scoring.first_reported(c.id for c in reported)
        shown_reported = next(c for c in reported if c.id == chosen)
    return Cell(
        metric=metric,
        reported=shown_reported,
        verified=verified,
        also_reported=max(0, len(reported) - 1),
        hacked=any(c.state == CurationState.HACKED for c in candidates),
    )


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
    verified_n_tasks: int | None = None
    cells: dict[str, Cell] = field(default_factory=dict)
    fast_p: Cell | None = None
    rank: int | None = None
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
            found = grouped.get((row.entry_id, metric_id), [])
            if not found and not every:
                continue
            row.cells[metric_id] = build_cell(metrics[metric_id], found, row.verified_run)
            if row.verified_n_tasks is None and row.verified_run is not None:
                row.verified_n_tasks = next(
                    (c.n_tasks for c in found if c.run_id == row.verified_run and c.n_tasks), None
                )


def fill_fast_p(
    rows: Iterable[Row], outcomes: dict, metrics: dict[str, Metric], p: float, level: Level
) -> None:
    """The fast_p cell at p: computed for verified rows from their per-task results, else as reported.

    A computed value carries the run's own verified score at that p, or else its correct-rate score, so
    that the run's curation state, baseline and task count show with it."""
    reported_id = scoring.reported_fast_p_metric(p)
    metric = fast_p_metric(p, metrics)
    for row in rows:
        stored = row.cells.get(reported_id) if reported_id else None
        run_outcomes = outcomes.get(row.verified_run)
        if run_outcomes is None:
            hacked = row.run_withheld == CurationState.HACKED
            row.fast_p = replace(stored, metric=metric) if stored else Cell(metric=metric, hacked=hacked)
            continue
        carrier = row.cells.get(TASK_COUNT_CARRIER)
        computed = {
            "verified": (stored and stored.verified) or (carrier and carrier.verified),
            "computed": scoring.fast_p(run_outcomes, p, run_denominator(row, run_outcomes, level)),
            "computed_p": p,
            "computed_run": row.verified_run,
        }
        row.fast_p = replace(stored, metric=metric, **computed) if stored else Cell(metric=metric, **computed)


def run_denominator(row: Row, run_outcomes: list, level: Level) -> int:
    """The tasks a verified row's rates are over: its run's task count, the level's when unknown, and
    never fewer than the run's results."""
    return max(row.verified_n_tasks or level.task_count, len(run_outcomes))


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


# --- the table -------------------------------------------------------------------------------------------


@dataclass
class Column:
    key: str
    title: str
    metric: Metric | None = None
    sort_url: str = ""
    sorted: str = ""  # "asc", "desc" or ""

    @property
    def is_metric(self) -> bool:
        return self.metric is not None

    @property
    def description(self) -> str:
        return self.metric.description if self.metric else ""

    @property
    def unit(self) -> str:
        return self.metric.unit if self.metric else ""


@dataclass
class Table:
    """A built table: its level, query, columns, every ordered row and the rows of the page."""

    level: Level
    query: TableQuery
    view: View
    sort_key: str
    descending: bool
    columns: list[Column]
    metric_ids: list[str]
    rows: list[Row]
    all_rows: list[Row]
    page: int
    pages: int
    hardware_options: list[str]
    metrics: dict[str, Metric]
    derived: dict = field(default_factory=dict, repr=False)

    def derive(self, name: str, compute):
        """What a view computes from this table (HTML, JSON, CSV), computed once per cached table."""
        if name not in self.derived:
            with table_cache.collector_paused():
                self.derived[name] = compute(self)
        return self.derived[name]

    @property
    def count(self) -> int:
        return len(self.all_rows)

    @property
    def sort(self) -> str:
        return ("-" if self.descending else "") + self.sort_key

    @property
    def sort_column(self) -> Column | None:
        return next((c for c in self.columns if c.key == self.sort_key), None)

    @property
    def first_index(self) -> int:
        return (self.page - 1) * self.query.per_page

    def page_url(self, page: int) -> str:
        return self.query.urlencode(page=page)


def natural_direction(key: str, metrics: dict[str, Metric]) -> bool:
    """Whether a column's first click sorts descending: metrics where higher is better, counts and dates."""
    metric = metrics.get(key)
    if metric is not None:
        return metric.direction != "lower"
    return key in (FAST_P_KEY, "n_tasks", "date")


def choose_sort(query: TableQuery, view: View, metrics: dict[str, Metric]) -> tuple[str, bool]:
    """The effective sort: the query's, or the view's first default the level has data for."""
    if query.sort:
        return query.sort.removeprefix("-"), query.sort.startswith("-")
    for candidate in view.default_sorts:
        key = candidate.removeprefix("-")
        if key == FAST_P_KEY or getattr(metrics.get(key), "present", False):
            return key, candidate.startswith("-")
    return "name", False


def visible_metric_ids(view: View, metrics: dict[str, Metric], sort_key: str) -> list[str]:
    """The view's metric columns the level has data for (the sort column stays even when empty)."""
    return [m for m in view.metric_ids if m in metrics and (metrics[m].present or m == sort_key)]


def shown_keys(view: View, metric_ids: list[str]) -> list[str]:
    """The value columns of a view, in order: the computed fast_p first where the view has it."""
    return [*([FAST_P_KEY] if view.computed_fast_p else []), *metric_ids]


def make_columns(query: TableQuery, view: View, metrics, metric_ids, sort_key, descending) -> list[Column]:
    keys = ["name", *view.info, *shown_keys(view, metric_ids)]
    columns = []
    for key in keys:
        metric = fast_p_metric(query.p, metrics) if key == FAST_P_KEY else metrics.get(key)
        active = key == sort_key
        next_descending = not descending if active else natural_direction(key, metrics)
        columns.append(
            Column(
                key=key,
                title=INFO_COLUMNS.get(key) or metric.short_name,
                metric=metric,
                sort_url=query.urlencode(sort=("-" if next_descending else "") + key, page=1),
                sorted=("desc" if descending else "asc") if active else "",
            )
        )
    return columns


def rank_rows(rows: list[Row], sort_key: str, descending: bool) -> list[Row]:
    """Order rows (ties alphabetically) with missing values last, and give each its competition rank."""
    by_name = sorted(rows, key=lambda row: (row.name.casefold(), row.entry_id))
    ordered = scoring.order_by_value(by_name, lambda row: row.value_of(sort_key), descending)
    ranks = scoring.competition_ranks([row.value_of(sort_key) for row in ordered])
    for row, rank in zip(ordered, ranks, strict=True):
        row.rank = rank
    return ordered


TASK_COUNT_CARRIER = "correct_rate"
"""A metric every verified run stores: ordering reads the run's task count (its n_tasks) from it."""

CHART_METRICS = ("fast_1", "fast_1_2", "fast_1_5", "fast_2", "correct_rate", "speedup_geomean")
"""Metrics the charts read for the page's rows besides the view's columns."""


def computable_runs(rows: Iterable[Row]) -> set[int]:
    """The verified runs whose per-task results may give computed values (none that curation withholds)."""
    return {row.verified_run for row in rows if row.verified_run and not row.run_withheld}


def build_table(level_number: int, query: TableQuery, paginate: bool = True) -> Table:
    """A level's table, from the cache while the data version it was built under is current."""
    level = fetch_level(level_number)
    if level.data_version is None:
        with table_cache.collector_paused():
            return build_level_table(level, query, paginate)
    key = (level.data_version, level.pk, query, paginate)
    return table_cache.tables.get_or_build(key, lambda: build_level_table(level, query, paginate))


def build_level_table(level: Level, query: TableQuery, paginate: bool) -> Table:
    """Build a level's table: phase A orders every row, phase B reads the page's rows in detail."""
    view = VIEWS[query.view]
    metrics = fetch_metrics(level, query)
    sort_key, descending = choose_sort(query, view, metrics)
    metric_ids = visible_metric_ids(view, metrics, sort_key)
    entries = [Row(*values) for values in fetch_entries(level, query, view)]
    rows = [row for row in entries if row.in_view and row_matches(row, query)]

    # Phase A: what ordering needs, for every row.
    rank_ids = {sort_key} & set(metric_ids)
    reported_fast_p = scoring.reported_fast_p_metric(query.p)
    if view.computed_fast_p and reported_fast_p in metrics:
        rank_ids.add(reported_fast_p)
    if view.computed_fast_p or sort_key == "n_tasks":
        rank_ids.add(TASK_COUNT_CARRIER)
    if rank_ids and rows:
        wanted = {row.entry_id for row in rows}
        light = fetch_candidates(Q(entry__level=level, metric_id__in=rank_ids), query, detail=False)
        fill_cells(rows, [c for c in light if c.entry_id in wanted], metrics, rank_ids, every=False)
    outcomes = {}
    if view.computed_fast_p:
        outcomes = fetch_outcomes(computable_runs(rows), query.verified_baseline)
        fill_fast_p(rows, outcomes, metrics, query.p, level)
    ordered = rank_rows(rows, sort_key, descending)
    page, pages, page_rows = 1, 1, ordered
    if paginate:
        pages = max(1, math.ceil(len(ordered) / query.per_page))
        page = min(query.page, pages)
        page_rows = ordered[(page - 1) * query.per_page : page * query.per_page]

    # Phase B: every score of the page's rows, with provenance.
    if page_rows:
        detail_ids = list(dict.fromkeys([*metric_ids, *(m for m in CHART_METRICS if m in metrics)]))
        page_ids = [row.entry_id for row in page_rows]
        full = fetch_candidates(Q(entry_id__in=page_ids, metric_id__in=detail_ids), query, detail=True)
        fill_cells(page_rows, full, metrics, detail_ids)
        if not view.computed_fast_p:
            outcomes = fetch_outcomes(computable_runs(page_rows), query.verified_baseline)
        else:
            fill_fast_p(page_rows, outcomes, metrics, query.p, level)
        attach_curves(page_rows, outcomes, level)

    for row in page_rows:
        row.info = [(key, row.info_text(key)) for key in view.info]
        row.line = [
            row.fast_p if key == FAST_P_KEY else row.cells[key] for key in shown_keys(view, metric_ids)
        ]
    return Table(
        level=level,
        query=query,
        view=view,
        sort_key=sort_key,
        descending=descending,
        columns=make_columns(query, view, metrics, metric_ids, sort_key, descending),
        metric_ids=metric_ids,
        rows=page_rows,
        all_rows=ordered,
        page=page,
        pages=pages,
        hardware_options=sorted({row.hardware for row in entries if row.hardware} | {query.hardware} - {""}),
        metrics=metrics,
    )
