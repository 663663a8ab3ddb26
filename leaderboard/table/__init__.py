"""Leaderboard tables: the one builder of rows, cells, ordering and pages for HTML, JSON, CSV and charts.

A table is built in two phases so that a level of a thousand entries costs the same six queries as a level
of ten: phase A reads, for every entry of the level, only what ordering needs (the sort column and,
in the fast_p view, the per-task results of verified runs); phase B reads every score with its provenance
for the rows of the requested page only. Which value a cell shows and how rows are ordered and ranked is
decided by `leaderboard.scoring`; this package only gathers the data and applies those rules.

Queries per table: the level, the metric catalogue (with which metrics the level has data for), the
entries (with whether each has scores in the view and its newest verified run), the sort column's scores,
the page's scores, and the per-task results of the verified runs involved: at most six.

Modules: `query` (views, columns, the URL's query), `fetch` (what is read from the database), `cells`
(what a cell shows), `rows` (a row per entry, fast_p computed), `build` (columns, order, page) and `cache`
(built tables kept until the data changes). The names below are the package's interface.
"""

from leaderboard.table.build import Column, Table, build_table
from leaderboard.table.cells import AGGREGATION_LABELS, BASELINE_LABELS, DENOMINATOR_LABELS, Cell, build_cell
from leaderboard.table.fetch import Candidate, fetch_candidates
from leaderboard.table.query import (
    ALL_LANES,
    DEFAULT_PER_PAGE,
    DEFAULT_VIEW,
    FAST_P_KEY,
    LANE_FILTERS,
    MAX_PER_PAGE,
    TOP_SELECTED,
    VIEWS,
    TableQuery,
    View,
    sortable_keys,
)
from leaderboard.table.rows import Row

__all__ = [
    "AGGREGATION_LABELS",
    "ALL_LANES",
    "BASELINE_LABELS",
    "DEFAULT_PER_PAGE",
    "DEFAULT_VIEW",
    "DENOMINATOR_LABELS",
    "FAST_P_KEY",
    "LANE_FILTERS",
    "MAX_PER_PAGE",
    "TOP_SELECTED",
    "VIEWS",
    "Candidate",
    "Cell",
    "Column",
    "Row",
    "Table",
    "TableQuery",
    "View",
    "build_cell",
    "build_table",
    "fetch_candidates",
    "sortable_keys",
]
