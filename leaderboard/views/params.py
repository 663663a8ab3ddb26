"""URL parameters of a leaderboard table, read into a TableQuery; bad input gets a clear error."""

import datetime
import math
import re
from collections.abc import Iterable, Mapping

from leaderboard import scoring
from leaderboard.models import Baseline, MethodKind, Provenance
from leaderboard.table import (
    DEFAULT_PER_PAGE,
    DEFAULT_VIEW,
    LANE_FILTERS,
    MAX_PER_PAGE,
    VIEWS,
    TableQuery,
    View,
    sortable_keys,
)


class BadQuery(ValueError):
    """A table parameter that cannot be read; the message says which and what is allowed."""


MONTH = re.compile(r"^(\d{4})[-.](\d{1,2})(?:-(\d{1,2}))?$")


def _choice(params: Mapping, name: str, allowed: Iterable[str]) -> str:
    value = (params.get(name) or "").strip()
    allowed = list(allowed)
    if value and value not in allowed:
        raise BadQuery(f"{name}={value!r} is not one of: {', '.join(allowed)}.")
    return value


def _month(params: Mapping, name: str, end: bool) -> datetime.date | None:
    text = (params.get(name) or "").strip()
    if not text:
        return None
    match = MONTH.match(text)
    if not match:
        raise BadQuery(f"{name}={text!r} is not a month: write YYYY-MM, e.g. 2026-06.")
    year, month = int(match.group(1)), int(match.group(2))
    if not 1 <= month <= 12:
        raise BadQuery(f"{name}={text!r}: the month must be 01 to 12.")
    if end:
        following = datetime.date(year + month // 12, month % 12 + 1, 1)
        return following - datetime.timedelta(days=1)
    return datetime.date(year, month, 1)


def _positive_int(params: Mapping, name: str, default: int, most: int) -> int:
    text = (params.get(name) or "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise BadQuery(f"{name}={text!r} must be a whole number of at least 1.")
    return min(int(text), most)


def _p(params: Mapping) -> float:
    text = (params.get("p") or "").strip()
    if not text:
        return 1.0
    try:
        value = float(text)
    except ValueError:
        raise BadQuery(f"p={text!r} is not a number.") from None
    if not math.isfinite(value) or not scoring.FAST_P_MIN <= value <= scoring.FAST_P_MAX:
        raise BadQuery(f"p={text!r} must be between {scoring.FAST_P_MIN:g} and {scoring.FAST_P_MAX:g}.")
    return scoring.parse_p(text)


def _sort(params: Mapping, view: View) -> str:
    text = (params.get("sort") or "").strip()
    key = text.removeprefix("-")
    if text and key not in sortable_keys(view):
        allowed = ", ".join(sorted(sortable_keys(view)))
        raise BadQuery(
            f"sort={text!r}: the {view.slug} view sorts by one of {allowed} (prefix - to reverse)."
        )
    return text


def _compare(params) -> tuple[int, ...]:
    values = params.getlist("compare") if hasattr(params, "getlist") else params.get("compare", [])
    if isinstance(values, str):
        values = [values]
    ids = []
    for text in values:
        for part in str(text).split(","):
            if part.strip():
                if not part.strip().isdigit():
                    raise BadQuery(f"compare={part!r} is not an entry id.")
                ids.append(int(part))
    return tuple(dict.fromkeys(ids))


def parse_query(params: Mapping) -> TableQuery:
    """Read a table query from URL parameters; raise BadQuery with a clear message for bad input."""
    view_slug = _choice(params, "view", VIEWS) or DEFAULT_VIEW
    view = VIEWS[view_slug]
    date_from, date_to = _month(params, "from", end=False), _month(params, "to", end=True)
    if date_from and date_to and date_from > date_to:
        raise BadQuery("from must not be after to.")
    return TableQuery(
        view=view_slug,
        sort=_sort(params, view),
        p=_p(params),
        hardware=(params.get("hardware") or "").strip(),
        baseline=_choice(params, "baseline", Baseline.values),
        provenance=_choice(params, "provenance", Provenance.values),
        kind=_choice(params, "kind", MethodKind.values),
        date_from=date_from,
        date_to=date_to,
        q=(params.get("q") or "").strip()[:200],
        lane=_choice(params, "lane", LANE_FILTERS),
        page=_positive_int(params, "page", 1, 10**6),
        per_page=_positive_int(params, "per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE),
        compare=_compare(params),
    )
