"""What the method, entry, task and home pages show, read in a few queries each (shared with the API)."""

from collections import defaultdict
from itertools import groupby

from django.db.models import Exists, OuterRef, Q, Subquery

from leaderboard import scoring
from leaderboard.models import (
    Baseline,
    Entry,
    EvaluationRun,
    Lane,
    Method,
    Metric,
    Provenance,
    Score,
    TaskResult,
)
from leaderboard.table import ALL_LANES, TableQuery, build_cell, fetch_candidates
from leaderboard.views.text import conventions_text
from tasks.models import Task

LATEST_RUNS = 10
BEST_KERNELS = 10


def rankable_verified(run_ref: str = "pk", metric_id: str | None = None):
    """The verified scores a leaderboard row shows of the outer query's run (of one metric when given)."""
    scores = Score.objects.shown_verified().filter(run=OuterRef(run_ref))
    return scores.filter(metric_id=metric_id) if metric_id else scores


def latest_verified_runs() -> list[EvaluationRun]:
    """Completed runs whose verified scores rank (either lane), newest first, with Fast1, geomean and lane."""
    fast_1 = rankable_verified(metric_id="fast_1").values("value")[:1]
    geomean = rankable_verified(metric_id="speedup_geomean_all").values("value")[:1]
    runs = (
        EvaluationRun.objects.filter(status=EvaluationRun.Status.COMPLETED)
        .filter(Exists(rankable_verified()))
        .select_related("hardware", "submission__entry__method", "submission__entry__level")
        .annotate(
            fast_1=Subquery(fast_1),
            geomean_all=Subquery(geomean),
            lane=Subquery(rankable_verified().values("lane")[:1]),
        )
        .order_by("-finished", "-pk")
    )
    return list(runs[:LATEST_RUNS])


def newest_runs(candidates) -> dict[int, int]:
    """Per entry, the newest run with rankable verified scores (the run its rows show)."""
    runs: dict[int, list[int]] = defaultdict(list)
    for candidate in candidates:
        if candidate.verified and candidate.rankable:
            runs[candidate.entry_id].append(candidate.run_id)
    return {entry_id: scoring.latest_verified_run(ids) for entry_id, ids in runs.items()}


def method_detail(slug: str) -> dict | None:
    """A method with all its entries across levels, each with the cells the leaderboard would show (in
    either lane: a separate-lane entry is marked)."""
    method = Method.objects.filter(slug=slug).first()
    if method is None:
        return None
    entries = list(
        Entry.objects.filter(method=method)
        .select_related("level", "hardware")
        .order_by("level__number", "date", "pk")
    )
    candidates = fetch_candidates(Q(entry__method=method), TableQuery(lane=ALL_LANES), detail=True)
    separate = {c.entry_id for c in candidates if c.verified and c.lane == Lane.SEPARATE}
    metrics = {metric.id: metric for metric in Metric.objects.all()}
    runs = newest_runs(candidates)
    grouped = defaultdict(list)
    for candidate in candidates:
        grouped[(candidate.entry_id, candidate.metric_id)].append(candidate)
    levels = []
    for level, level_entries in groupby(entries, key=lambda entry: entry.level):
        level_entries = list(level_entries)
        ids = {entry.pk for entry in level_entries}
        present = [m for m in metrics if any(key[1] == m and key[0] in ids for key in grouped)]
        rows = [
            {
                "entry": entry,
                "verified_run": runs.get(entry.pk),
                "separate_lane": entry.pk in separate,
                "cells": [
                    build_cell(metrics[m], grouped.get((entry.pk, m), []), runs.get(entry.pk))
                    for m in present
                ],
            }
            for entry in level_entries
        ]
        levels.append({"level": level, "metrics": [metrics[m] for m in present], "rows": rows})
    return {"method": method, "levels": levels}


def entry_scores(entry: Entry) -> list[dict]:
    """Every score of an entry that is not hidden, grouped by metric in catalogue order; the difference
    is taken against the entry's newest verified run, the one its leaderboard row shows."""
    scores = (
        Score.objects.filter(entry=entry)
        .shown()
        .select_related("metric", "source", "run__hardware")
        .order_by("metric__position", "provenance", "-run_id", "baseline", "pk")
    )
    scores = list(scores)
    shown_run = scoring.latest_verified_run(s.run_id for s in scores if shows_verified(s))
    groups = []
    for metric, metric_scores in groupby(scores, key=lambda score: score.metric):
        metric_scores = list(metric_scores)
        for score in metric_scores:
            score.conventions = conventions_text(
                score.aggregation, score.threshold_op, score.denominator, score.baseline, score.n_tasks
            ) + (f" · {score.suite} suite" if score.suite else "")
        reported = [
            s for s in metric_scores if s.provenance == Provenance.REPORTED and scoring.is_rankable(s.state)
        ]
        first = min(reported, key=lambda s: s.pk, default=None)
        shown = next((s for s in metric_scores if shows_verified(s) and s.run_id == shown_run), None)
        groups.append(
            {
                "metric": metric,
                "scores": metric_scores,
                "difference": scoring.difference(shown and shown.value, first and first.value),
            }
        )
    return groups


def shows_verified(score: Score) -> bool:
    """A verified score of the kind the leaderboard shows: rankable, against PyTorch eager."""
    return score.is_verified and scoring.is_rankable(score.state) and score.baseline == Baseline.EAGER


def entry_detail(pk: int) -> dict | None:
    entry = Entry.objects.select_related("method", "level", "hardware").filter(pk=pk).first()
    if entry is None:
        return None
    runs = list(
        EvaluationRun.objects.filter(submission__entry=entry)
        .select_related("hardware", "submission")
        .order_by("-created", "-pk")
    )
    return {"entry": entry, "metric_groups": entry_scores(entry), "runs": runs}


def stat(stats, name: str = "median") -> float | None:
    """One statistic of a harness timing record ({'median': …, 'mean': …}), or a bare number."""
    if isinstance(stats, dict):
        value = stats.get(name)
        return value if isinstance(value, int | float) else None
    return stats if isinstance(stats, int | float) else None


def task_baselines(task: Task) -> list[dict]:
    """The reference's timings per hardware (and device), from the newest verified result on each."""
    results = (
        TaskResult.objects.filter(task=task)
        .exclude(baseline_eager_ms=None, baseline_compile_ms=None)
        .order_by("-run__finished", "-run_id")
        .values("run_id", "run__hardware__name", "run__device", "baseline_eager_ms", "baseline_compile_ms")
    )
    found: dict[tuple[str, str], dict] = {}
    counts: dict[tuple[str, str], set] = defaultdict(set)
    for result in results:
        key = (result["run__hardware__name"], result["run__device"])
        counts[key].add(result["run_id"])
        found.setdefault(
            key,
            {
                "hardware": key[0],
                "device": key[1],
                "eager_ms": stat(result["baseline_eager_ms"]),
                "compile_ms": stat(result["baseline_compile_ms"]),
                "run_id": result["run_id"],
            },
        )
    return [{**value, "runs": len(counts[key])} for key, value in sorted(found.items())]


def best_kernels(task: Task) -> list[TaskResult]:
    """Correct sample-0 kernels from runs whose scores rank, fastest against eager first; hacks never."""
    results = (
        TaskResult.objects.filter(task=task, correct=True, kernel__sample=0, speedup_eager__isnull=False)
        .filter(Exists(rankable_verified(run_ref="run")))
        .select_related("run__hardware", "run__submission__entry__method", "kernel")
        .order_by("-speedup_eager", "pk")
    )
    best = []
    for result in results[: BEST_KERNELS * 3]:
        if not result.has_hack_flag:
            best.append(result)
        if len(best) == BEST_KERNELS:
            break
    return best


def task_detail(task: Task) -> dict:
    versions = list(
        Task.objects.filter(suite=task.suite, level=task.level, problem_id=task.problem_id).order_by(
            "-version"
        )
    )
    return {
        "task": task,
        "versions": versions,
        "baselines": task_baselines(task),
        "best": best_kernels(task),
    }


def task_groups() -> list[dict]:
    """Current tasks grouped by suite and level, for the task index."""
    tasks = Task.objects.current().select_related("level").order_by("suite", "level__number", "problem_id")
    return [
        {"suite": suite, "level": level, "tasks": list(group)}
        for (suite, level), group in groupby(tasks, key=lambda task: (task.suite, task.level.number))
    ]
