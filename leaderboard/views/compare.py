"""Head-to-head comparison of entries: `/compare/?entries=ID,ID[,…]` — every metric side by side with its
conventions and interval, and for verified entries a per-task table and a scatter of their speedups."""

from collections import defaultdict

from django.db.models import Q
from django.shortcuts import render

from leaderboard.models import Entry, Metric, TaskResult
from leaderboard.table import ALL_LANES, TableQuery, build_cell, fetch_candidates
from leaderboard.views.details import newest_runs
from leaderboard.views.text import conventions_text, format_value

MAX_ENTRIES = 6


class BadComparison(ValueError):
    """The entries parameter names no comparable set of entries."""


def parse_ids(text: str | None) -> list[int]:
    """The entry ids of `entries=3,7,12`: integers, two to MAX_ENTRIES distinct ones, in the order given."""
    if not text or not text.strip():
        raise BadComparison("Give the entries to compare, e.g. /compare/?entries=3,7.")
    ids = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or len(part) > 12:
            raise BadComparison(f"{part[:40]!r} is not an entry id (ids are whole numbers).")
        if int(part) not in ids:
            ids.append(int(part))
    if len(ids) < 2:
        raise BadComparison("Give at least two different entry ids to compare.")
    if len(ids) > MAX_ENTRIES:
        raise BadComparison(f"At most {MAX_ENTRIES} entries can be compared at once.")
    return ids


def load_entries(ids: list[int]) -> list[Entry]:
    found = Entry.objects.select_related("method", "level", "hardware").in_bulk(ids)
    missing = [str(pk) for pk in ids if pk not in found]
    if missing:
        raise BadComparison(f"There is no entry {', '.join(missing)}.")
    return [found[pk] for pk in ids]


def interval_text(cell) -> str:
    interval = cell.ci
    if interval is None:
        return "n/a" if cell.value is not None else ""
    low, high = (format_value(bound, cell.metric.unit) for bound in (interval.low, interval.high))
    return f"[{low}–{high}] {interval.method}"


def metric_rows(entries: list[Entry]) -> tuple[list[dict], dict[int, int]]:
    """Per metric any entry has, one cell per entry (the value its leaderboard row shows, with provenance,
    conventions and interval); and each entry's newest verified run."""
    candidates = fetch_candidates(Q(entry_id__in=[e.pk for e in entries]), TableQuery(lane=ALL_LANES), True)
    runs = newest_runs(candidates)
    grouped = defaultdict(list)
    for candidate in candidates:
        grouped[(candidate.entry_id, candidate.metric_id)].append(candidate)
    rows = []
    for metric in Metric.objects.all():
        cells = [build_cell(metric, grouped.get((e.pk, metric.id), []), runs.get(e.pk)) for e in entries]
        if all(cell.value is None for cell in cells):
            continue
        rows.append({"metric": metric, "cells": [cell_view(cell) for cell in cells]})
    return rows, runs


def cell_view(cell) -> dict:
    shown = cell.shown
    conventions = ""
    if shown is not None:
        conventions = conventions_text(
            shown.aggregation, shown.threshold_op, shown.denominator, shown.baseline, shown.n_tasks
        )
    return {
        "value": format_value(cell.value, cell.metric.unit),
        "provenance": cell.provenance,
        "conventions": conventions,
        "interval": interval_text(cell),
    }


def verdict(result: TaskResult | None) -> str:
    if result is None:
        return "missing"
    if result.has_hack_flag:
        return "hack"
    if result.correct:
        return "correct"
    return "incorrect" if result.compiled else "did not compile"


def ranks(result: TaskResult | None) -> bool:
    """Whether a result competes for the task: correct, not a hack, with a speedup against eager."""
    return result is not None and verdict(result) == "correct" and result.speedup_eager is not None


def winner(results: list[TaskResult | None], entries: list[Entry]) -> Entry | str:
    """The entry whose correct kernel is fastest against eager ('tie' on equal speedups, '—' for none)."""
    scored = [(r.speedup_eager, entry) for r, entry in zip(results, entries, strict=True) if ranks(r)]
    if not scored:
        return "—"
    best = max(speed for speed, _ in scored)
    leaders = [entry for speed, entry in scored if speed == best]
    return leaders[0] if len(leaders) == 1 else "tie"


def task_rows(entries: list[Entry], runs: dict[int, int]) -> tuple[list[Entry], list[dict]]:
    """The verified entries and, per task any of their newest runs has, each one's verdict and speedups."""
    verified = [entry for entry in entries if entry.pk in runs]
    results = (
        TaskResult.objects.filter(run_id__in=[runs[e.pk] for e in verified], kernel__sample=0)
        .select_related("task__level")
        .order_by("task__level__number", "task__problem_id")
    )
    by_task: dict[str, dict[int, TaskResult]] = defaultdict(dict)
    order: list[str] = []
    for result in results:
        if result.task.key not in by_task:
            order.append(result.task.key)
        by_task[result.task.key][result.run_id] = result
    rows = []
    for key in order:
        found = [by_task[key].get(runs[entry.pk]) for entry in verified]
        rows.append(
            {
                "task": key,
                "cells": [task_cell(result) for result in found],
                "winner": winner(found, verified),
                "speedups": [r.speedup_eager if ranks(r) else None for r in found],
            }
        )
    return verified, rows


def task_cell(result: TaskResult | None) -> dict:
    shown = ranks(result)
    return {
        "verdict": verdict(result),
        "eager": format_value(result.speedup_eager, "×") if shown else "",
        "compile": format_value(result.speedup_compile, "×") if shown and result.speedup_compile else "",
    }


def scatter_data(verified: list[Entry], rows: list[dict]) -> dict | None:
    """Per task both of the first two verified entries solved: (first's speedup, second's) against eager."""
    if len(verified) < 2:
        return None
    points = [
        {"x": row["speedups"][0], "y": row["speedups"][1], "task": row["task"]}
        for row in rows
        if row["speedups"][0] is not None and row["speedups"][1] is not None
    ]
    return {"x_label": verified[0].display_name, "y_label": verified[1].display_name, "points": points}


def comparison(ids: list[int]) -> dict:
    """What the comparison page shows (the test of parse_ids and load_entries first)."""
    entries = load_entries(ids)
    metrics, runs = metric_rows(entries)
    verified, tasks = task_rows(entries, runs)
    wins = [(entry, sum(1 for row in tasks if row["winner"] == entry)) for entry in verified]
    return {
        "entries": entries,
        "metrics": metrics,
        "verified": verified,
        "tasks": tasks,
        "wins": wins,
        "scatter": scatter_data(verified, tasks),
        "mixed_levels": len({entry.level_id for entry in entries}) > 1,
    }


def requested_ids(query) -> str:
    """The ids asked for: `entries=3,7`, or the rows ticked on a level table (`compare=3&compare=7`)."""
    return ",".join([*query.getlist("entries"), *query.getlist("compare")])


def compare(request):
    try:
        context = comparison(parse_ids(requested_ids(request.GET)))
    except BadComparison as bad:
        context = {"message": str(bad), "title": "Those entries cannot be compared"}
        return render(request, "leaderboard/compare.html", context, status=400)
    return render(request, "leaderboard/compare.html", context)
