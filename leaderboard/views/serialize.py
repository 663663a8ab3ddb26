"""Table rows as plain data: the JSON API's rows and the CSV export's records, from the same table."""

from django.urls import reverse

from leaderboard import intervals
from leaderboard.table import Candidate, Cell, Row, Table


def source_data(score: Candidate) -> dict:
    return {
        "title": score.source_title,
        "kind": score.source_kind,
        "arxiv_id": score.source_arxiv_id,
        "url": score.source_link,
    }


def reported_data(cell: Cell) -> dict | None:
    score = cell.reported
    if score is None:
        return None
    return {
        "value": score.value,
        "source": source_data(score),
        "source_table": score.source_table,
        "as_written": score.as_written,
        "state": score.state,
        "more_sources": cell.also_reported,
        "entry_id": score.entry_id,
        "paired": cell.paired,
    }


def verified_data(cell: Cell) -> dict | None:
    if cell.verified_value is None:
        return None
    score = cell.verified
    run = {"id": cell.run_id, "url": cell.link}
    if score is not None:
        run |= {
            "hardware": score.run_hardware,
            "device": score.run_device,
            "harness_version": score.harness_version,
        }
    return {
        "value": cell.verified_value,
        "run": run,
        "computed_at_p": cell.computed_p,
        "ci": [score.ci_low, score.ci_high] if score is not None and score.ci_low is not None else None,
        "state": score.state if score is not None else "visible",
    }


def interval_data(cell: Cell) -> dict:
    """ci_low, ci_high and ci_method of a cell's value: 'wilson' or 'bootstrap'; 'n/a' (no bounds) for a
    reported number without per-task data (see scoring.value_interval)."""
    interval = cell.ci
    if interval is None:
        return {"ci_low": None, "ci_high": None, "ci_method": intervals.NOT_AVAILABLE}
    return {"ci_low": interval.low, "ci_high": interval.high, "ci_method": interval.method}


def cell_data(cell: Cell | None) -> dict | None:
    """A cell with its provenance and interval; None when the row has nothing for the metric."""
    if cell is None or (cell.value is None and not cell.hacked):
        return None
    shown = cell.shown
    return {
        "value": cell.value,
        **interval_data(cell),
        "provenance": cell.provenance or None,
        "aggregation": shown.aggregation if shown else None,
        "threshold_op": cell.threshold_op or None,
        "denominator": shown.denominator if shown else None,
        "baseline": shown.baseline if shown else None,
        "n_tasks": shown.n_tasks if shown else None,
        "suite": (shown.suite or None) if shown else None,
        "lane": shown.lane if shown else None,
        "flagged": cell.flagged,
        "hacked": cell.hacked and cell.value is None,
        "reported": reported_data(cell),
        "verified": verified_data(cell),
        "difference": cell.difference,
    }


def paired_data(row: Row) -> dict | None:
    """The reported entry a verified row is paired with (leaderboard.pairing), or None."""
    if row.paired_entry is None:
        return None
    return {"entry_id": row.paired_entry, "url": reverse("leaderboard:entry", args=[row.paired_entry])}


def row_data(row: Row, table: Table) -> dict:
    """One row of the JSON leaderboard: the entry's metadata and its scores keyed by metric id."""
    data = {
        "rank": row.rank,
        "rank_tied": row.tied,
        "entry_id": row.entry_id,
        "name": row.name,
        "label": row.label,
        "method": {
            "name": row.method_name,
            "slug": row.method_slug,
            "kind": row.method_kind,
            "backbone": row.backbone,
            "agent_models": row.agent_models,
            "url": row.method_url,
        },
        "hardware": row.hardware or None,
        "date": row.date.strftime("%Y-%m") if row.date else None,
        "baseline": row.baseline,
        "n_tasks": row.n_tasks,
        "task_subset": row.task_subset,
        "mode": row.mode,
        "data_source": row.data_source,
        "reproduce": row.reproduce,
        "verified_run": row.verified_run,
        "paired_with": paired_data(row),
        "lane": row.lane,
        "suite": row.suite or None,
        "url": row.url,
        "scores": {metric_id: cell_data(row.cells.get(metric_id)) for metric_id in table.metric_ids},
    }
    if table.view.computed_fast_p:
        data["fast_p"] = {"p": table.query.p, **(cell_data(row.fast_p) or {"value": None})}
    return data


def table_data(table: Table) -> dict:
    """The whole JSON answer for a leaderboard query."""
    query = table.query
    return {
        "level": {
            "number": table.level.number,
            "name": table.level.name,
            "task_count": table.level.task_count,
        },
        "view": table.view.slug,
        "sort": table.sort,
        "p": query.p,
        "filters": {
            "hardware": query.hardware or None,
            "baseline": query.baseline or None,
            "provenance": query.provenance or None,
            "kind": query.kind or None,
            "from": query.date_from.strftime("%Y-%m") if query.date_from else None,
            "to": query.date_to.strftime("%Y-%m") if query.date_to else None,
            "q": query.q or None,
            "lane": query.lane or None,
        },
        "lanes": list(query.lanes),
        "columns": [
            {"key": c.key, "title": c.title, "unit": c.unit or None, "metric": c.is_metric}
            for c in table.columns
        ],
        "count": table.count,
        "page": table.page,
        "pages": table.pages,
        "per_page": query.per_page,
        "rows": [row_data(row, table) for row in table.rows],
    }


def csv_header(table: Table) -> list[str]:
    header = ["rank", "rank_tied", "entry_id", "method", "entry", "lane", "suite"]
    header += [column.key for column in table.columns if not column.is_metric and column.key != "name"]
    for column in table.columns:
        if column.is_metric:
            header += [column.key, f"{column.key}_provenance", f"{column.key}_source"]
            header += [f"{column.key}_ci_low", f"{column.key}_ci_high", f"{column.key}_ci_method"]
            if column.key == "speedup_mean":
                header.append("speedup_mean_type")
    return header


def csv_provenance(cell: Cell | None) -> tuple[str, str]:
    if cell is None or cell.empty:
        return "", ""
    if cell.value is None:
        return "hacked", ""
    if cell.provenance == "verified":
        return "verified", f"run #{cell.run_id}"
    return "reported", " · ".join(p for p in (cell.reported.source_title, cell.reported.source_table) if p)


def csv_interval(cell: Cell | None) -> tuple[str, str, str]:
    """A cell's interval columns: bounds and method, 'n/a' for a value without one, '' for no value."""
    if cell is None or cell.value is None:
        return "", "", ""
    data = interval_data(cell)
    bounds = ("" if data[key] is None else repr(data[key]) for key in ("ci_low", "ci_high"))
    return (*bounds, data["ci_method"])


def csv_info(row: Row, key: str) -> str:
    if key == "hardware":
        return row.hardware
    if key == "date":
        return row.date.strftime("%Y-%m") if row.date else ""
    if key == "baseline":
        return row.baseline
    if key == "n_tasks":
        return "" if row.n_tasks is None else str(row.n_tasks)
    if key == "kind":
        return row.method_kind
    raise KeyError(key)


def csv_record(row: Row, table: Table) -> list[str]:
    """One CSV line: the row's columns as on screen, each metric with its provenance and source."""
    record = ["" if row.rank is None else str(row.rank), "yes" if row.tied else ""]
    record += [str(row.entry_id), row.method_name, row.name]
    record += [row.lane, row.suite]
    record += [csv_info(row, c.key) for c in table.columns if not c.is_metric and c.key != "name"]
    for column in table.columns:
        if not column.is_metric:
            continue
        cell = row.fast_p if column.key == "fast_p" else row.cells.get(column.key)
        value = cell.value if cell is not None else None
        record += ["" if value is None else repr(value), *csv_provenance(cell), *csv_interval(cell)]
        if column.key == "speedup_mean":
            record.append(cell.aggregation_tag if cell is not None else "")
    return record
