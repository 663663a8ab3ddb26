"""eval_results.json and the database: a verified entry's newest run exported, a file imported as a
reported entry with per-task results and the reported scores computed from them (one transaction)."""

import hashlib
import logging
from dataclasses import dataclass

from django.db import transaction

from leaderboard import eval_results, scoring
from leaderboard.models import (
    Baseline,
    Entry,
    Hardware,
    Level,
    Method,
    MethodKind,
    Metric,
    Provenance,
    ReportedTaskResult,
    Score,
    Source,
    TaskResult,
)

logger = logging.getLogger(__name__)

IMPORT_NOTE = "Computed by this site from the per-task results of an imported KernelBench eval_results.json."


def shown_run(entry: Entry) -> int | None:
    """The run an entry's leaderboard row shows: its newest with rankable verified scores vs eager."""
    run_ids = Score.objects.shown_verified().filter(entry=entry).values_list("run_id", flat=True)
    return scoring.latest_verified_run(run_ids)


def export_entry(entry: Entry) -> dict | None:
    """The entry's shown verified run as KernelBench's eval_results.json (None: no such run)."""
    run_id = shown_run(entry)
    if run_id is None:
        return None
    results = (
        TaskResult.objects.filter(run_id=run_id)
        .select_related("task__level", "kernel", "run__hardware")
        .order_by("task__problem_id", "kernel__sample")
    )
    data: dict[str, list] = {}
    for result in results:
        correct = scoring.task_outcome(result.correct, result.speedup_eager, result.flags).correct
        sample = eval_results.export_sample(result, correct, result.run.hardware.name)
        data.setdefault(str(result.task.problem_id), []).append(sample)
    return data


@dataclass(frozen=True)
class ImportOptions:
    method: str
    hardware: str
    level: int
    citation: str = ""
    label: str = ""
    baseline: str = Baseline.EAGER


def import_key(options: ImportOptions, text: str) -> str:
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"eval_results:{options.method.casefold()}:L{options.level}:{options.hardware.casefold()}:{digest}"


def reported_outcomes(samples: list[eval_results.Sample]) -> list[scoring.TaskOutcome]:
    """Sample 0 of each problem, as aggregation reads it (the speedup only where both times are known)."""
    return [scoring.TaskOutcome(s.correct, s.speedup) for s in samples if s.sample_id == 0]


@transaction.atomic
def import_file(text: str, options: ImportOptions, times_text: str = "") -> Entry:
    """Store a file as a reported entry: its per-task results and the scores aggregated from sample 0 over
    the level's tasks. Re-importing the same file replaces what it stored; a bad file stores nothing."""
    level = Level.objects.filter(number=options.level).order_by("benchmark_id").first()
    if level is None:
        raise eval_results.EvalResultsError(f"there is no level {options.level}")
    samples = eval_results.parse_eval_results(text, level.task_count)
    if times_text:
        times = eval_results.parse_baseline_times(times_text, options.level)
        samples = eval_results.with_reference_times(samples, times)
    if not any(s.sample_id == 0 for s in samples):
        raise eval_results.EvalResultsError("no problem has a sample 0: nothing would rank")
    method, _ = Method.objects.get_or_create_by_name(options.method, kind=MethodKind.UNCLASSIFIED)
    hardware, _ = Hardware.objects.get_or_create(name=options.hardware.strip())
    source = citation_source(options)
    entry, _ = Entry.objects.update_or_create(
        import_key=import_key(options, text),
        defaults={
            "method": method,
            "level": level,
            "hardware": hardware,
            "label": options.label,
            "baseline": options.baseline,
            "data_source": "KernelBench eval_results.json",
            "n_tasks": level.task_count,
        },
    )
    entry.reported_results.all().delete()
    entry.scores.filter(provenance=Provenance.REPORTED, source=source).delete()
    store_results(entry, source, samples)
    store_scores(entry, source, reported_outcomes(samples), level.task_count, options.baseline)
    logger.info("imported %d samples of eval_results.json as entry %s", len(samples), entry.pk)
    return entry


def citation_source(options: ImportOptions) -> Source:
    title = f"{options.method} · KernelBench eval_results.json (L{options.level}, {options.hardware})"
    source, _ = Source.objects.get_or_create(
        title=title[:300], kind=Source.Kind.OTHER, defaults={"url": options.citation}
    )
    if options.citation and source.url != options.citation:
        source.url = options.citation
        source.save(update_fields=["url"])
    return source


def store_results(entry: Entry, source: Source, samples: list[eval_results.Sample]) -> None:
    ReportedTaskResult.objects.bulk_create(
        ReportedTaskResult(
            entry=entry,
            source=source,
            problem_id=s.problem_id,
            sample_id=s.sample_id,
            compiled=s.compiled,
            correct=s.correct,
            runtime_ms=s.runtime,
            ref_runtime_ms=s.ref_runtime,
            speedup=s.speedup,
            metadata=s.metadata,
        )
        for s in samples
    )


def store_scores(entry, source, outcomes, n_tasks: int, baseline: str) -> None:
    """The reported scores of the imported run, aggregated like a verified run's (with their intervals)."""
    metrics = set(Metric.objects.values_list("id", flat=True))
    for aggregate in scoring.aggregate(outcomes, n_tasks).values():
        if aggregate.value is None or aggregate.metric_id not in metrics:
            continue
        Score.objects.create(
            entry=entry,
            metric_id=aggregate.metric_id,
            **aggregate.score_fields(),
            provenance=Provenance.REPORTED,
            source=source,
            source_table="eval_results.json",
            as_written=f"{aggregate.value:g} (computed from per-task results)",
            baseline=baseline,
            n_tasks=n_tasks,
            notes=IMPORT_NOTE,
        )
