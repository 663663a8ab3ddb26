"""Chart data for a leaderboard page, read from the same built table as the rows on screen."""

from leaderboard import scoring
from leaderboard.table import FAST_P_KEY, TOP_SELECTED, Row, Table

BAR_LIMIT = 25
"""Bars in the sort-metric chart: the table's top rows."""
POINTS_PER_MONTH = 8
"""Entries drawn per month in the over-time chart: the month's best (the line uses every entry)."""


def sort_value(row: Row, table: Table) -> float | None:
    value = row.value_of(table.sort_key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def bars(table: Table) -> list[dict]:
    """The current sort metric for the table's top rows, in table order."""
    found = []
    for row in table.all_rows:
        value = sort_value(row, table)
        if value is not None:
            cell = row.fast_p if table.sort_key == FAST_P_KEY else row.cells.get(table.sort_key)
            found.append(
                {"id": row.entry_id, "label": row.name, "value": value, "provenance": cell.provenance}
            )
        if len(found) == BAR_LIMIT:
            break
    return found


def reported_points(row: Row) -> list[list[float]]:
    points = []
    for p, metric_id in sorted(scoring.REPORTED_FAST_P.items()):
        cell = row.cells.get(metric_id)
        if cell is not None and cell.reported_value is not None:
            points.append([p, cell.reported_value])
    return points


def curves(table: Table) -> list[dict]:
    """fast_p against p for the page's rows: a full curve for verified rows, reported points otherwise."""
    grid = scoring.fast_p_grid()
    found = []
    for row in table.rows:
        if row.curve is not None:
            found.append(
                {
                    "id": row.entry_id,
                    "label": row.name,
                    "verified": True,
                    "points": [list(pair) for pair in zip(grid, row.curve, strict=True)],
                }
            )
        elif points := reported_points(row):
            found.append({"id": row.entry_id, "label": row.name, "verified": False, "points": points})
    return found


def selected(table: Table, drawn: list[dict]) -> list[int]:
    """The rows whose curves are drawn: the viewer's choice, else the page's first few with data."""
    ids = [item["id"] for item in drawn]
    chosen = [pk for pk in table.query.compare if pk in ids]
    return chosen or ids[:TOP_SELECTED]


def scatter(table: Table) -> list[dict]:
    """Correct rate against geomean speedup, for the page's rows that have both."""
    found = []
    for row in table.rows:
        correct, speed = row.cells.get("correct_rate"), row.cells.get("speedup_geomean")
        if correct and speed and correct.value is not None and speed.value is not None:
            found.append(
                {
                    "id": row.entry_id,
                    "label": row.name,
                    "x": correct.value,
                    "y": speed.value,
                    "provenance": speed.provenance,
                }
            )
    return found


def month(date) -> str:
    return f"{date.year}-{date.month:02d}"


def timeline(table: Table) -> dict:
    """The sort metric by entry month: each month's best entries, and the best value up to each month."""
    metric = table.sort_column.metric if table.sort_column else None
    lower_better = metric is not None and metric.direction == "lower"
    by_month: dict[str, list[tuple[float, Row]]] = {}
    for row in table.all_rows:
        value = sort_value(row, table)
        if row.date and value is not None:
            by_month.setdefault(month(row.date), []).append((value, row))
    months = sorted(by_month)
    points, best, leader = [], [], None
    for key in months:
        ranked = sorted(by_month[key], key=lambda pair: pair[0], reverse=not lower_better)
        points += [{"x": key, "y": value, "label": row.name} for value, row in ranked[:POINTS_PER_MONTH]]
        top = ranked[0]
        if leader is None or (top[0] < leader[0] if lower_better else top[0] > leader[0]):
            leader = top
        best.append({"x": key, "y": leader[0], "label": leader[1].name})
    return {"months": months, "points": points, "best": best}


def chart_data(table: Table) -> dict:
    column = table.sort_column
    drawn = curves(table)
    numeric = column is not None and column.is_metric
    return {
        "sort": {
            "key": table.sort_key,
            "title": column.title if column else table.sort_key,
            "unit": column.unit if column else "",
        },
        "numeric": numeric,
        "bars": bars(table) if numeric else [],
        "curves": drawn,
        "selected": selected(table, drawn),
        "p": table.query.p,
        "scatter": scatter(table),
        "timeline": timeline(table) if numeric else {"months": [], "points": [], "best": []},
    }
