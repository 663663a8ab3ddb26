"""URL parameters of a leaderboard table, read into a TableQuery; bad input gets a clear error.

Every value is checked before it is used: its length, its characters (ASCII digits where a number is
meant) and its range, so that junk, huge numbers, NaN or NUL get a 400 with a sentence, never a 500.
`TABLE_PARAMETERS` names them all (the property test in tests/serving sends junk to each).
"""

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


TABLE_PARAMETERS = (
    "view", "sort", "p", "hardware", "baseline", "provenance", "kind", "from", "to", "q", "page",
    "per_page", "compare",
)  # fmt: skip
MONTH = re.compile(r"(\d{4})[-.](\d{1,2})(?:-(\d{1,2}))?", re.ASCII)
YEARS = (1900, 2999)
MAX_DIGITS = 9
"""Whole numbers (page, per_page) have at most this many digits; entry ids at most MAX_ID_DIGITS."""
MAX_ID_DIGITS = 18
MAX_COMPARED = 50
MAX_TEXT = 200
"""Characters of a free-text parameter (q, hardware) that are read; q is cut there, hardware refused."""
MAX_NUMBER_TEXT = 32


def shown(text: str) -> str:
    """A value as an error message quotes it: repr, and shortened (messages echo what was sent)."""
    return repr(text if len(text) <= 60 else f"{text[:40]}…")


def _text(params: Mapping, name: str) -> str:
    value = params.get(name) or ""
    return value.strip() if isinstance(value, str) else ""


def _digits(text: str, most: int) -> bool:
    """ASCII digits only (str.isdigit also takes '²' and '٣', which int() then refuses), not too many."""
    return text.isascii() and text.isdigit() and len(text) <= most


def _choice(params: Mapping, name: str, allowed: Iterable[str]) -> str:
    value = _text(params, name)
    allowed = list(allowed)
    if value and value not in allowed:
        raise BadQuery(f"{name}={shown(value)} is not one of: {', '.join(allowed)}.")
    return value


def _month(params: Mapping, name: str, end: bool) -> datetime.date | None:
    text = _text(params, name)
    if not text:
        return None
    match = MONTH.fullmatch(text)
    if not match:
        raise BadQuery(f"{name}={shown(text)} is not a month: write YYYY-MM, e.g. 2026-06.")
    year, month = int(match.group(1)), int(match.group(2))
    if not 1 <= month <= 12:
        raise BadQuery(f"{name}={shown(text)}: the month must be 01 to 12.")
    if not YEARS[0] <= year <= YEARS[1]:
        raise BadQuery(f"{name}={shown(text)}: the year must be {YEARS[0]} to {YEARS[1]}.")
    if end:
        following = datetime.date(year + month // 12, month % 12 + 1, 1)
        return following - datetime.timedelta(days=1)
    return datetime.date(year, month, 1)


def _positive_int(params: Mapping, name: str, default: int, most: int) -> int:
    text = _text(params, name)
    if not text:
        return default
    if not _digits(text, MAX_DIGITS) or int(text) < 1:
        raise BadQuery(f"{name}={shown(text)} must be a whole number from 1 to {most}.")
    return min(int(text), most)


def _free_text(params: Mapping, name: str) -> str:
    text = _text(params, name)
    if len(text) > MAX_TEXT:
        raise BadQuery(f"{name} is {len(text)} characters long; at most {MAX_TEXT} are read.")
    return text


def _p(params: Mapping) -> float:
    text = _text(params, "p")
    if not text:
        return 1.0
    if len(text) > MAX_NUMBER_TEXT:
        raise BadQuery(f"p={shown(text)} is not a number.")
    try:
        value = float(text)
    except ValueError:
        raise BadQuery(f"p={shown(text)} is not a number.") from None
    if not math.isfinite(value) or not scoring.FAST_P_MIN <= value <= scoring.FAST_P_MAX:
        raise BadQuery(f"p={shown(text)} must be between {scoring.FAST_P_MIN:g} and {scoring.FAST_P_MAX:g}.")
    return scoring.parse_p(text)


def _sort(params: Mapping, view: View) -> str:
    text = _text(params, "sort")
    key = text.removeprefix("-")
    if text and key not in sortable_keys(view):
        allowed = ", ".join(sorted(sortable_keys(view)))
        raise BadQuery(
            f"sort={shown(text)}: the {view.slug} view sorts by one of {allowed} (prefix - to reverse)."
        )
    return text


def _compare(params) -> tuple[int, ...]:
    values = params.getlist("compare") if hasattr(params, "getlist") else params.get("compare", [])
    if isinstance(values, str):
        values = [values]
    ids = []
    for text in values:
        for part in str(text).split(","):
            part = part.strip()
            if not part:
                continue
            if not _digits(part, MAX_ID_DIGITS):
                raise BadQuery(f"compare={shown(part)} is not an entry id.")
            ids.append(int(part))
    ids = list(dict.fromkeys(ids))
    if len(ids) > MAX_COMPARED:
        raise BadQuery(f"compare names {len(ids)} entries; at most {MAX_COMPARED} can be compared.")
    return tuple(ids)


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
        hardware=_free_text(params, "hardware"),
        baseline=_choice(params, "baseline", Baseline.values),
        provenance=_choice(params, "provenance", Provenance.values),
        kind=_choice(params, "kind", MethodKind.values),
        date_from=date_from,
        date_to=date_to,
        q=_text(params, "q")[:MAX_TEXT],
        lane=_choice(params, "lane", LANE_FILTERS),
        page=_positive_int(params, "page", 1, 10**6),
        per_page=_positive_int(params, "per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE),
        compare=_compare(params),
    )
