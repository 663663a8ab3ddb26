"""Building a table: its columns, the order and ranks of its rows, its page, and the cache in front."""

import math
from dataclasses import dataclass, field

from django.db.models import Q

from leaderboard import scoring
from leaderboard.models import Level, Metric
from leaderboard.table import cache
from leaderboard.table.fetch import (
    fetch_candidates,
    fetch_entries,
    fetch_level,
    fetch_metrics,
    fetch_outcomes,
    fetch_reported_outcomes,
)
from leaderboard.table.query import FAST_P_KEY, INFO_COLUMNS, VIEWS, TableQuery, View
from leaderboard.table.rows import (
    TASK_COUNT_CARRIER,
    Row,
    attach_curves,
    computable_runs,
    fast_p_metric,
    fill_cells,
    fill_fast_p,
    paired_ids,
    per_task_reported_rows,
    row_matches,
)


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
            with cache.collector_paused():
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
    """Order rows (ties alphabetically) with missing values last, give each its competition rank, and mark
    those not separable at 95 % from the row above (scoring.inseparable_from_previous)."""
    by_name = sorted(rows, key=lambda row: (row.name.casefold(), row.entry_id))
    ordered = scoring.order_by_value(by_name, lambda row: row.value_of(sort_key), descending)
    ranks = scoring.competition_ranks([row.value_of(sort_key) for row in ordered])
    ranked = [row.interval_of(sort_key) if rank else None for row, rank in zip(ordered, ranks, strict=True)]
    ties = scoring.inseparable_from_previous(ranked)
    for row, rank, tied in zip(ordered, ranks, ties, strict=True):
        row.rank, row.tied = rank, tied
    return ordered


CHART_METRICS = ("fast_1", "fast_1_2", "fast_1_5", "fast_2", "correct_rate", "speedup_geomean")
"""Metrics the charts read for the page's rows besides the view's columns."""


def build_table(level_number: int, query: TableQuery, paginate: bool = True) -> Table:
    """A level's table, from the cache while the data version it was built under is current."""
    level = fetch_level(level_number)
    if level.data_version is None:
        with cache.collector_paused():
            return build_level_table(level, query, paginate)
    key = (level.data_version, level.pk, query, paginate)
    return cache.tables.get_or_build(key, lambda: build_level_table(level, query, paginate))


def build_level_table(level: Level, query: TableQuery, paginate: bool) -> Table:
    """Build a level's table: phase A orders every row, phase B reads the page's rows in detail."""
    layout = plan_layout(level, query)
    entries = [Row(*values) for values in fetch_entries(level, query, layout.view)]
    rows = [row for row in entries if row.in_view and row_matches(row, query)]
    ordered, outcomes, reported = order_rows(layout, rows)
    page, pages, page_rows = paginate_rows(ordered, query, paginate)
    detail_rows(layout, page_rows, outcomes, reported)
    return Table(
        level=level,
        query=query,
        view=layout.view,
        sort_key=layout.sort_key,
        descending=layout.descending,
        columns=make_columns(
            query, layout.view, layout.metrics, layout.metric_ids, layout.sort_key, layout.descending
        ),
        metric_ids=layout.metric_ids,
        rows=page_rows,
        all_rows=ordered,
        page=page,
        pages=pages,
        hardware_options=sorted({row.hardware for row in entries if row.hardware} | {query.hardware} - {""}),
        metrics=layout.metrics,
    )


@dataclass
class Layout:
    """What a table shows, settled before any score is read: the view, its sort and its metric columns."""

    level: Level
    query: TableQuery
    view: View
    metrics: dict[str, Metric]
    sort_key: str
    descending: bool
    metric_ids: list[str]


def plan_layout(level: Level, query: TableQuery) -> Layout:
    view = VIEWS[query.view]
    metrics = fetch_metrics(level, query)
    sort_key, descending = choose_sort(query, view, metrics)
    metric_ids = visible_metric_ids(view, metrics, sort_key)
    return Layout(level, query, view, metrics, sort_key, descending, metric_ids)


def order_rows(layout: Layout, rows: list[Row]) -> tuple[list[Row], dict, dict]:
    """Phase A: what ordering needs, for every row; the rows in order, and the run outcomes and imported
    per-task outcomes of reported entries read."""
    level, query, view, metrics = layout.level, layout.query, layout.view, layout.metrics
    rank_ids = {layout.sort_key} & set(layout.metric_ids)
    reported_fast_p = scoring.reported_fast_p_metric(query.p)
    if view.computed_fast_p and reported_fast_p in metrics:
        rank_ids.add(reported_fast_p)
    if view.computed_fast_p or layout.sort_key == "n_tasks":
        rank_ids.add(TASK_COUNT_CARRIER)
    if rank_ids and rows:
        wanted = {row.entry_id for row in rows} | paired_ids(rows)
        light = fetch_candidates(Q(entry__level=level, metric_id__in=rank_ids), query, detail=False)
        fill_cells(rows, [c for c in light if c.entry_id in wanted], metrics, rank_ids, every=False)
    outcomes, reported = {}, {}
    if view.computed_fast_p:
        outcomes = fetch_outcomes(computable_runs(rows), query.verified_baseline)
        reported = fetch_reported_outcomes(per_task_reported_rows(rows))
        fill_fast_p(rows, outcomes, metrics, query.p, level, reported)
    return rank_rows(rows, layout.sort_key, layout.descending), outcomes, reported


def paginate_rows(ordered: list[Row], query: TableQuery, paginate: bool) -> tuple[int, int, list[Row]]:
    """(page, pages, the page's rows); every row on one page when not paginating."""
    if not paginate:
        return 1, 1, ordered
    pages = max(1, math.ceil(len(ordered) / query.per_page))
    page = min(query.page, pages)
    return page, pages, ordered[(page - 1) * query.per_page : page * query.per_page]


def detail_rows(layout: Layout, page_rows: list[Row], outcomes: dict, reported: dict) -> None:
    """Phase B: every score of the page's rows, with provenance, and each row's info and value line."""
    level, query, view, metrics = layout.level, layout.query, layout.view, layout.metrics
    if page_rows:
        detail_ids = list(dict.fromkeys([*layout.metric_ids, *(m for m in CHART_METRICS if m in metrics)]))
        page_ids = [row.entry_id for row in page_rows] + sorted(paired_ids(page_rows))
        full = fetch_candidates(Q(entry_id__in=page_ids, metric_id__in=detail_ids), query, detail=True)
        fill_cells(page_rows, full, metrics, detail_ids)
        if not view.computed_fast_p:
            outcomes = fetch_outcomes(computable_runs(page_rows), query.verified_baseline)
        else:
            fill_fast_p(page_rows, outcomes, metrics, query.p, level, reported)
        attach_curves(page_rows, outcomes, level)
    keys = shown_keys(view, layout.metric_ids)
    for row in page_rows:
        row.info = [(key, row.info_text(key)) for key in view.info]
        row.line = [row.fast_p if key == FAST_P_KEY else row.cells[key] for key in keys]
