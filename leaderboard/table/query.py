"""A table's query: the views and their columns, and everything a URL can say about a table."""

import datetime
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from leaderboard.models import METRIC_COLUMNS, Baseline, Lane

DEFAULT_PER_PAGE = 50
MAX_PER_PAGE = 1000
TOP_SELECTED = 5
"""Rows drawn in the fast_p curve when the viewer has not picked any."""


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
        METRIC_COLUMNS + ("speedup_geomean_all",),
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


ALL_LANES = "all"
LANE_FILTERS = (*Lane.values, ALL_LANES)
"""Values of the lane filter: one lane, or both ranked together; without it a table shows the ranking lane."""


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
    lane: str = ""
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE
    compare: tuple[int, ...] = ()

    @property
    def filtered(self) -> bool:
        return any(
            (self.hardware, self.baseline, self.provenance, self.kind, self.date_from, self.date_to, self.q)
        ) or self.lanes != (Lane.RANKING,)

    @property
    def lanes(self) -> tuple[str, ...]:
        """The lanes whose scores the table shows: the ranking lane unless the lane filter says otherwise."""
        if self.lane == ALL_LANES:
            return tuple(Lane.values)
        return (self.lane or Lane.RANKING,)

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
        for name in ("hardware", "baseline", "provenance", "kind", "q", "lane"):
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
