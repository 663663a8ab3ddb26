"""Test data for the leaderboard views: methods, entries, reported scores and verified runs with results."""

import datetime
import hashlib
import itertools

from django.contrib.auth import get_user_model

from leaderboard import scoring
from leaderboard.models import (
    Baseline,
    CurationState,
    Entry,
    EvaluationRun,
    Hardware,
    KernelSource,
    Level,
    Method,
    Provenance,
    Score,
    Source,
    Submission,
    SubmissionKernel,
    TaskResult,
)
from tasks.models import Task

_serial = itertools.count(1)


def level(number: int = 2) -> Level:
    return Level.objects.get(number=number)


def hardware(name: str = "H100") -> Hardware:
    return Hardware.objects.get_or_create(name=name, defaults={"vendor": "NVIDIA"})[0]


def method(name: str | None = None, **fields) -> Method:
    name = name or f"Method {next(_serial)}"
    slug = name.lower().replace(" ", "-").replace(".", "")
    return Method.objects.create(name=name, slug=slug, **fields)


def source(title: str = "A paper", **fields) -> Source:
    return Source.objects.get_or_create(title=title, kind=fields.pop("kind", "paper"), defaults=fields)[0]


def entry(name: str | None = None, number: int = 2, gpu: str | None = None, **fields) -> Entry:
    """An entry of a new method (or of fields['method']) on a level."""
    owner = fields.pop("method", None) or method(name)
    return Entry.objects.create(
        method=owner,
        level=level(number),
        hardware=hardware(gpu) if gpu else None,
        date=fields.pop("date", datetime.date(2026, 6, 1)),
        **fields,
    )


def reported(entry: Entry, metric_id: str, value: float, paper: Source | None = None, **fields) -> Score:
    """A reported score with its source (a default paper) and the value as written."""
    fields.setdefault("as_written", f"{value:g}")
    fields.setdefault("source_table", "Table 1")
    return Score.objects.create(
        entry=entry,
        metric_id=metric_id,
        value=value,
        provenance=Provenance.REPORTED,
        source=paper or source(),
        **fields,
    )


def tasks(number: int, count: int, suite: str = scoring.RANKING_SUITE) -> list[Task]:
    """count tasks of a level of a suite (KernelBench's stand-ins by default), created once and reused."""
    found = []
    for problem_id in range(1, count + 1):
        text = f"# problem {problem_id}\nclass Model: pass\n"
        task, _ = Task.objects.get_or_create(
            suite=suite,
            level=level(number),
            problem_id=problem_id,
            version=1,
            defaults={
                "name": f"{problem_id}_Problem",
                "content_hash": hashlib.md5(text.encode()).hexdigest(),  # noqa: S324 - a fixture's hash
                "source": text,
            },
        )
        found.append(task)
    return found


def user():
    return get_user_model().objects.get_or_create(username="submitter")[0]


def submission(entry: Entry, gpu: Hardware, suite: str = scoring.RANKING_SUITE) -> Submission:
    return Submission.objects.create(
        user=user(),
        entry=entry,
        suite=suite,
        hardware=gpu,
        status=Submission.Status.COMPLETED,
        bundle_format=Submission.Format.LEADERBOARD_JSON,
        bundle_sha256=hashlib.sha256(str(next(_serial)).encode()).hexdigest(),
    )


def kernel(owner: Submission, task: Task, sample: int = 0) -> SubmissionKernel:
    text = f"# kernel for {task.key} sample {sample} of #{owner.pk}\n"
    digest = hashlib.sha256(text.encode()).hexdigest()
    source_row = KernelSource.objects.get_or_create(
        sha256=digest, defaults={"text": text, "size": len(text)}
    )[0]
    return SubmissionKernel.objects.create(
        submission=owner,
        task=task,
        sample=sample,
        source=source_row,
        file_name=f"{task.key}_sample_{sample}.py",
    )


def verified_run(
    entry: Entry,
    results: list[tuple[bool, float | None, float | None]],
    gpu: str = "H100",
    n_tasks: int | None = None,
    device: str = "cuda",
    state: str = CurationState.VISIBLE,
    extra_samples: int = 0,
    suite: str = scoring.RANKING_SUITE,
) -> EvaluationRun:
    """A completed run: one TaskResult per (correct, speedup vs eager, vs compile), and its verified scores.

    The scores come from scoring.aggregate() over the sample-0 results, for both baselines, with the suite
    and lane, as the verified-score writer stores them: a run over another suite than the ranking one, or
    on the CPU, is of the separate lane. extra_samples adds that many other samples per task (never ranked).
    """
    gpu_row = hardware(gpu)
    owner = submission(entry, gpu_row, suite)
    now = datetime.datetime.now(datetime.UTC)
    run = EvaluationRun.objects.create(
        submission=owner,
        harness_version="1.0.0",
        device=device,
        hardware=gpu_row,
        status=EvaluationRun.Status.COMPLETED,
        started=now,
        finished=now,
    )
    task_rows = tasks(entry.level.number, len(results), suite)
    for task, (correct, eager, compiled) in zip(task_rows, results, strict=True):
        for sample in range(1 + extra_samples):
            TaskResult.objects.create(
                run=run,
                kernel=kernel(owner, task, sample),
                task=task,
                compiled=True,
                correct=correct if sample == 0 else not correct,
                speedup_eager=eager if sample == 0 else 50.0,
                speedup_compile=compiled if sample == 0 else 50.0,
                baseline_eager_ms={"median": 2.0, "mean": 2.1},
                baseline_compile_ms={"median": 1.5, "mean": 1.6},
            )
    verified_scores(run, results, n_tasks or entry.level.task_count, state)
    return run


def verified_scores(run: EvaluationRun, results: list, n_tasks: int, state: str) -> None:
    """The run's verified scores for both baselines, from scoring.aggregate() over the sample-0 results."""
    for baseline, index in ((Baseline.EAGER, 1), (Baseline.COMPILE, 2)):
        outcomes = [scoring.TaskOutcome(correct=r[0], speedup=r[index]) for r in results]
        for aggregate in scoring.aggregate(outcomes, n_tasks).values():
            if aggregate.value is None:
                continue
            Score.objects.create(
                entry=run.submission.entry,
                metric_id=aggregate.metric_id,
                **aggregate.score_fields(),
                provenance=Provenance.VERIFIED,
                run=run,
                harness_version=run.harness_version,
                baseline=baseline,
                n_tasks=n_tasks,
                suite=run.submission.suite,
                lane=scoring.lane(run.submission.suite, run.device),
                state=state,
            )


# --- a small level-2 board covering every case the tables must handle -----------------------------------

DR_KERNEL = {"title": "Dr. Kernel paper", "arxiv_id": "2602.05885"}
FIVE_FAST = [(True, 1.5, 0.9), (True, 2.5, 1.2), (True, 0.8, 0.5), (False, None, None), (True, 1.1, 1.0)]
"""Five tasks: four correct (speedups vs eager 1.5, 2.5, 0.8, 1.1), one incorrect."""


class Board:
    """Named entries of a small L2 board (see make_board)."""


def make_board() -> Board:
    """L2 entries: reported rows with and without Fast1, a verified row (also reported), a hacked, a hidden,
    a flagged and a torch.compile-baseline row, on two GPUs, of several method kinds and dates."""
    board = Board()
    paper = source(DR_KERNEL["title"], arxiv_id=DR_KERNEL["arxiv_id"])
    board.paper = paper
    board.alpha = entry("Alpha-14B", gpu="H100", date=datetime.date(2026, 6, 1))
    board.alpha.method.kind = "trained"
    board.alpha.method.backbone = "Qwen3-14B-Base"
    board.alpha.method.save()
    reported(board.alpha, "fast_1", 70.6, paper, threshold_op=">=")
    reported(board.alpha, "fast_1_2", 27.1, paper, threshold_op=">=")
    reported(board.alpha, "fast_2", 6.2, paper, threshold_op=">=")

    board.beta = entry("Beta-8B", gpu="H100", date=datetime.date(2026, 5, 1))
    reported(board.beta, "fast_1", 44.8, paper, threshold_op=">=")
    reported(board.beta, "fast_2", 7.9, paper, threshold_op=">=")

    board.gamma = entry("Gamma Agent", gpu="L40S", date=datetime.date(2026, 2, 1))
    board.gamma.method.kind = "agent"
    board.gamma.method.save()
    blaster = source("KernelBlaster paper", arxiv_id="2602.14293")
    reported(board.gamma, "correct_rate", 95, blaster, source_table="Table 3")
    reported(board.gamma, "speedup_mean", 9.419, blaster, aggregation="arithmetic", source_table="Table 3")
    reported(board.gamma, "speedup_geomean", 2.214, blaster, aggregation="geometric", source_table="Table 3")

    board.delta = entry("Delta Compare", date=datetime.date(2026, 6, 1))
    comparison = source("KernelPro paper", arxiv_id="2606.26453")
    reported(board.delta, "speedup_mean", 4.69, comparison, aggregation="geometric")

    board.verified = entry("Verified-Method", gpu="H100", date=datetime.date(2026, 7, 1))
    reported(board.verified, "fast_1", 50.0, paper)
    board.run = verified_run(board.verified, FIVE_FAST, gpu="H100", n_tasks=10, extra_samples=1)

    board.hacked = entry("Hacked-Method", gpu="H100")
    reported(board.hacked, "fast_1", 99.0, paper, state="hacked", state_reason="reads the reference output")
    reported(board.hacked, "fast_2", 1.0, paper)

    board.hidden = entry("Hidden-Method", gpu="H100")
    reported(board.hidden, "fast_1", 98.0, paper, state="hidden")

    board.flagged = entry("Flagged-Method", gpu="H100", date=datetime.date(2026, 3, 1))
    reported(board.flagged, "fast_1", 60.0, paper, state="flagged", state_reason="suspicious timing")

    board.compiled = entry("Compiled-Method", baseline="compile", date=datetime.date(2026, 6, 1))
    post = source("Launch post", kind="launch_post", url="https://example.org/post")
    reported(board.compiled, "speedup_median", 2.06, post, baseline="compile", aggregation="median")
    return board
