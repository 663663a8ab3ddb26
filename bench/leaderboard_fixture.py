"""A large Level 2 for the leaderboard benchmark: 1,000 entries × 13 metrics, some of them verified.

Reported entries get every almanac column from one of a few dozen sources; verified entries get a
completed run with per-task results (sample 0 and a second sample) and verified scores for both
baselines computed by leaderboard.scoring.aggregate, as the verified-score writer stores them.
"""

import datetime
import hashlib
import logging
import random

from django.contrib.auth import get_user_model
from django.db import transaction

from leaderboard import scoring
from leaderboard.models import (
    Baseline,
    Entry,
    EvaluationRun,
    Hardware,
    KernelSource,
    Level,
    Method,
    MethodKind,
    Provenance,
    Score,
    Source,
    Submission,
    SubmissionKernel,
    TaskResult,
)
from tasks.models import Task

logger = logging.getLogger(__name__)

ENTRIES = 1000
VERIFIED = 20
SOURCES = 40
GPUS = ["H100", "H200", "L40S", "A100", "RTX 6000"]
METRICS = {
    "fast_1": (5, 80),
    "correct_rate": (40, 100),
    "speedup_mean": (0.5, 12),
    "speedup_geomean": (0.3, 3),
    "speedup_median": (0.3, 3),
    "speedup_min": (0.01, 0.5),
    "speedup_max": (3, 400),
    "pct_faster": (10, 90),
    "pct_slower": (10, 90),
    "success_rate": (0.5, 1),
    "fast_1_2": (2, 40),
    "fast_1_5": (1, 25),
    "fast_2": (0.1, 15),
}
"""The 13 almanac columns with the range their bench values are drawn from."""
MARKER = "bench:L2:"


def is_loaded(level: Level) -> bool:
    return Entry.objects.filter(level=level, import_key__startswith=MARKER).count() >= ENTRIES


def reported_scores(entry: Entry, source: Source, rng: random.Random) -> list[Score]:
    scores = []
    for metric_id, (low, high) in METRICS.items():
        value = round(rng.uniform(low, high), 3)
        scores.append(
            Score(
                entry=entry,
                metric_id=metric_id,
                value=value,
                provenance=Provenance.REPORTED,
                source=source,
                source_table=f"Table {rng.randint(1, 4)}",
                as_written=f"{value:g}",
                aggregation="geometric"
                if metric_id == "speedup_mean" and rng.random() < 0.3
                else "arithmetic",
                threshold_op=">=" if metric_id.startswith("fast_") else "",
                state=rng.choices(["visible", "flagged", "hacked", "hidden"], [0.94, 0.03, 0.02, 0.01])[0],
                state_reason="bench curation",
            )
        )
    return scores


def make_entries(level: Level, rng: random.Random) -> list[Entry]:
    kinds = [kind for kind, _ in MethodKind.choices]
    gpus = [Hardware.objects.get_or_create(name=name)[0] for name in GPUS]
    methods = Method.objects.bulk_create(
        Method(
            name=f"Bench method {i:04d}",
            slug=f"bench-method-{i:04d}",
            kind=rng.choice(kinds),
            backbone=rng.choice(["Qwen3-8B-Base", "Qwen3-14B-Base", "", "Llama-3-70B"]),
        )
        for i in range(ENTRIES)
    )
    return Entry.objects.bulk_create(
        Entry(
            method=method,
            level=level,
            label=method.name,
            hardware=rng.choice(gpus + [None]),
            date=datetime.date(rng.randint(2024, 2026), rng.randint(1, 12), 1),
            baseline=rng.choice([Baseline.EAGER] * 4 + [Baseline.COMPILE]),
            import_key=f"{MARKER}{index}",
        )
        for index, method in enumerate(methods)
    )


def make_tasks(level: Level) -> list[Task]:
    tasks = []
    for problem_id in range(1, level.task_count + 1):
        text = f"# bench problem {problem_id}\n"
        tasks.append(
            Task.objects.get_or_create(
                suite=scoring.RANKING_SUITE,
                level=level,
                problem_id=problem_id,
                version=1,
                defaults={
                    "name": f"{problem_id}_Bench",
                    "content_hash": hashlib.md5(text.encode()).hexdigest(),
                    "source": text,
                },
            )[0]
        )
    return tasks


def verify(entry: Entry, tasks: list[Task], gpu: Hardware, rng: random.Random) -> None:
    """A completed run of entry with one result per task and sample, and its verified scores."""
    user = get_user_model().objects.get_or_create(username="bench")[0]
    submission = Submission.objects.create(
        user=user,
        entry=entry,
        suite=scoring.RANKING_SUITE,
        hardware=gpu,
        status="completed",
        bundle_format="leaderboard_json",
        bundle_sha256=hashlib.sha256(str(entry.pk).encode()).hexdigest(),
    )
    now = datetime.datetime.now(datetime.UTC)
    run = EvaluationRun.objects.create(
        submission=submission,
        harness_version="bench",
        hardware=gpu,
        status="completed",
        started=now,
        finished=now,
    )
    outcomes = add_results(run, bench_kernels(submission, tasks), rng)
    add_scores(run, outcomes, len(tasks))


def bench_kernels(submission: Submission, tasks: list[Task]) -> list[SubmissionKernel]:
    """Samples 0 and 1 of every task, each a kernel source of its own."""
    kernels = []
    for task in tasks:
        for sample in (0, 1):
            text = f"# kernel {submission.entry_id} {task.pk} {sample}\n"
            digest = hashlib.sha256(text.encode()).hexdigest()
            source = KernelSource.objects.get_or_create(
                sha256=digest, defaults={"text": text, "size": len(text)}
            )[0]
            kernels.append(
                SubmissionKernel(
                    submission=submission,
                    task=task,
                    sample=sample,
                    source=source,
                    file_name=f"{task.key}_sample_{sample}_kernel.py",
                )
            )
    return SubmissionKernel.objects.bulk_create(kernels)


def add_results(run: EvaluationRun, kernels: list[SubmissionKernel], rng: random.Random) -> dict:
    """A random result per kernel (80 % correct); the sample-0 outcomes against each baseline."""
    results, outcomes = [], {Baseline.EAGER: [], Baseline.COMPILE: []}
    for kernel in kernels:
        correct = rng.random() < 0.8
        eager = round(rng.lognormvariate(0.1, 0.6), 4) if correct else None
        compiled = round(eager * rng.uniform(0.5, 0.9), 4) if correct else None
        results.append(
            TaskResult(
                run=run,
                kernel=kernel,
                task=kernel.task,
                compiled=True,
                correct=correct,
                speedup_eager=eager,
                speedup_compile=compiled,
                baseline_eager_ms={"median": 1.0, "mean": 1.1},
                baseline_compile_ms={"median": 0.8},
            )
        )
        if kernel.sample == 0:
            outcomes[Baseline.EAGER].append(scoring.TaskOutcome(correct, eager))
            outcomes[Baseline.COMPILE].append(scoring.TaskOutcome(correct, compiled))
    TaskResult.objects.bulk_create(results)
    return outcomes


def add_scores(run: EvaluationRun, outcomes: dict, n_tasks: int) -> None:
    """The run's verified scores, aggregated by scoring from its outcomes."""
    scores = []
    for baseline, baseline_outcomes in outcomes.items():
        for item in scoring.aggregate(baseline_outcomes, n_tasks).values():
            if item.value is None:
                continue
            scores.append(
                Score(
                    entry_id=run.submission.entry_id,
                    metric_id=item.metric_id,
                    value=item.value,
                    provenance=Provenance.VERIFIED,
                    run=run,
                    harness_version="bench",
                    aggregation=item.aggregation,
                    denominator=item.denominator,
                    threshold_op=item.threshold_op,
                    ci_low=item.ci_low,
                    ci_high=item.ci_high,
                    baseline=baseline,
                    n_tasks=n_tasks,
                    suite=run.submission.suite,
                    lane=scoring.lane(run.submission.suite, run.device),
                )
            )
    Score.objects.bulk_create(scores)


@transaction.atomic
def load(seed: int = 0) -> Level:
    """Fill Level 2 with the bench entries once (a second call finds them and returns)."""
    level = Level.objects.get(number=2)
    if is_loaded(level):
        return level
    rng = random.Random(seed)
    sources = [
        Source.objects.get_or_create(title=f"Bench paper {i}", arxiv_id=f"2601.{i:05d}")[0]
        for i in range(SOURCES)
    ]
    entries = make_entries(level, rng)
    scores = []
    for entry in entries:
        scores += reported_scores(entry, rng.choice(sources), rng)
    Score.objects.bulk_create(scores, batch_size=2000)
    tasks = make_tasks(level)
    gpu = Hardware.objects.get(name="H100")
    for entry in rng.sample(entries, VERIFIED):
        verify(entry, tasks, gpu, rng)
    logger.info(
        "loaded %d entries, %d reported scores, %d verified runs", len(entries), len(scores), VERIFIED
    )
    return level
