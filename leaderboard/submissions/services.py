"""Submission workflows: accept a bundle (one transaction), queue its evaluation, re-verify, cancel."""

import datetime
import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from leaderboard.models import (
    Baseline,
    Entry,
    EvaluationRun,
    Hardware,
    KernelSource,
    Method,
    MethodKind,
    Submission,
    SubmissionKernel,
)
from leaderboard.reference_data import CPU_HARDWARE
from leaderboard.submissions import states
from leaderboard.submissions.bundles import Bundle, check_bundle
from leaderboard.submissions.quotas import check_quota
from tasks.models import Task

logger = logging.getLogger(__name__)

Status = Submission.Status
LIVE_RUN_STATUSES = (EvaluationRun.Status.QUEUED, EvaluationRun.Status.RUNNING)
DEFAULT_SUITE = "builtin"


@dataclass
class EntryDetails:
    """What the uploader says about the entry: the method (existing or new) and how the kernels were made."""

    method_name: str
    hardware: Hardware
    method_kind: str = MethodKind.ZERO_SHOT_LLM
    backbone: str = ""
    agent_models: str = ""
    label: str = ""
    data_source: str = ""
    mode: str = ""
    notes: str = ""
    suite: str = DEFAULT_SUITE
    extra: dict = field(default_factory=dict)


class SubmissionRefused(Exception):
    """A submission that cannot be accepted for a reason other than its bundle (e.g. no such hardware)."""


def current_tasks(suite: str):
    return Task.objects.filter(suite=suite, is_current=True).select_related("level")


def known_task_keys(suite: str) -> set[str]:
    return {task.key for task in current_tasks(suite)}


def suite_task_count(suite: str, level_number: int) -> int:
    """Tasks in one level of a suite: the denominator of fast_p and the rates."""
    return current_tasks(suite).filter(level__number=level_number).count()


def evaluation_targets():
    """Hardware that submissions may target: each with a worker queue, and the CPU target."""
    return Hardware.objects.filter(~Q(queue="") | Q(name=CPU_HARDWARE))


def target_names() -> str:
    return ", ".join(evaluation_targets().values_list("name", flat=True)) or "none configured"


def find_target(name: str) -> Hardware:
    """The evaluation target of that name (any case); SubmissionRefused naming the choices if none."""
    hardware = evaluation_targets().filter(name__iexact=name.strip()).first()
    if hardware is None:
        raise SubmissionRefused(f"unknown hardware {name!r}; choose one of: {target_names()}")
    return hardware


def route(hardware: Hardware) -> tuple[str, str]:
    """(queue, device) for a hardware target: GPU queues evaluate on CUDA, the cpu queue on the CPU.

    Only the CPU target may lack a queue (it is then served by 'cpu'); other hardware without one (a GPU
    of the reported scores that no worker has) is refused, never quietly evaluated on the CPU.
    """
    queue = hardware.queue or ("cpu" if hardware.name == CPU_HARDWARE else "")
    if not queue:
        raise SubmissionRefused(
            f"hardware {hardware.name} has no evaluation queue; choose one of: {target_names()}"
        )
    if queue not in settings.QUEUE_NAMES:
        raise SubmissionRefused(f"no evaluation queue {queue!r} for hardware {hardware.name}")
    return queue, "cpu" if queue == "cpu" else "cuda"


def harness_version() -> str:
    """The evaluator's version string, read without importing torch."""
    from evaluator import HARNESS_VERSION

    return HARNESS_VERSION


def submit_bundle(user, data: bytes, name: str, details: EntryDetails) -> list[Submission]:
    """Validate a bundle and store it whole in one transaction: one submission (and entry) per level.

    Raises BundleError (every problem named), QuotaExceeded or SubmissionRefused; stores nothing then.
    Evaluation jobs are enqueued only once the transaction commits.
    """
    route(details.hardware)
    bundle = check_bundle(data, name, known_task_keys(details.suite), details.suite)
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()  # one upload at a time
        check_quota(user, new=len(bundle.levels))
        method = find_or_create_method(details)
        sources = store_sources(bundle)
        tasks = {task.key: task for task in current_tasks(details.suite)}
        return [
            create_level_submission(user, bundle, level, method, details, sources, tasks)
            for level in bundle.levels
        ]


def find_or_create_method(details: EntryDetails) -> Method:
    """The method of that name (case-insensitive), created with the given details if new."""
    name = details.method_name.strip()
    existing = Method.objects.filter(name__iexact=name).first()
    if existing:
        return existing
    return Method.objects.create(
        name=name,
        slug=unique_slug(name),
        kind=details.method_kind,
        backbone=details.backbone,
        agent_models=details.agent_models,
    )


def unique_slug(name: str) -> str:
    base = slugify(name)[:120] or "method"
    slug, n = base, 1
    while Method.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def store_sources(bundle: Bundle) -> dict[str, KernelSource]:
    """Store each distinct kernel text once (deduplicated by SHA-256); return them by hash."""
    texts = {kernel.sha256: kernel.text for kernel in bundle.kernels}
    KernelSource.objects.bulk_create(
        [KernelSource(sha256=sha, text=text, size=len(text.encode())) for sha, text in texts.items()],
        ignore_conflicts=True,
    )
    return KernelSource.objects.in_bulk(list(texts), field_name="sha256")


def create_entry(user, level, method: Method, details: EntryDetails, n_submitted: int) -> Entry:
    """The leaderboard entry a submission's verified scores will belong to."""
    n_tasks = suite_task_count(details.suite, level.number)
    today = timezone.now().date()
    return Entry.objects.create(
        method=method,
        level=level,
        label=details.label,
        hardware=details.hardware,
        data_source=details.data_source or f"Submission by {user.get_username()}",
        mode=details.mode,
        date=datetime.date(today.year, today.month, 1),
        task_subset=f"{n_submitted} of {n_tasks} tasks ({details.suite} suite)",
        n_tasks=n_tasks,
        baseline=Baseline.EAGER,
        notes=details.notes,
        metadata=stated(
            {
                "submitted_by": user.get_username(),
                "backbone": details.backbone,
                "agent_models": details.agent_models,
                "suite": details.suite,
                **details.extra,
            }
        ),
    )


def stated(metadata: dict) -> dict:
    """The metadata without its empty values: what the uploader left blank is not stated."""
    return {key: value for key, value in metadata.items() if value not in ("", None)}


def create_level_submission(user, bundle, level_number, method, details, sources, tasks) -> Submission:
    """Store one level of a bundle as a submission with its kernels, then queue its evaluation."""
    kernels = bundle.kernels_of_level(level_number)
    level = tasks[kernels[0].task_key].level
    entry = create_entry(user, level, method, details, len({k.task_key for k in kernels}))
    submission = Submission.objects.create(
        user=user,
        entry=entry,
        suite=details.suite,
        hardware=details.hardware,
        bundle_format=bundle.format,
        bundle_name=bundle.name[:255],
        bundle_sha256=bundle.sha256,
        bundle_metadata={"metadata": bundle.metadata, "skipped": bundle.skipped},
    )
    states.record_creation(submission, f"bundle {bundle.name!r} received")
    SubmissionKernel.objects.bulk_create(
        SubmissionKernel(
            submission=submission,
            task=tasks[kernel.task_key],
            sample=kernel.sample,
            source=sources[kernel.sha256],
            file_name=kernel.file_name,
        )
        for kernel in kernels
    )
    ranked = sum(1 for kernel in kernels if kernel.sample == 0)
    states.move(submission.pk, Status.VALIDATED, f"{len(kernels)} kernels, {ranked} of them sample 0")
    queue_evaluation(submission, requested_by=user, reason="queued for evaluation")
    submission.refresh_from_db()
    return submission


def kernels_in_scope(submission: Submission, all_samples: bool):
    kernels = submission.kernels.all()
    return kernels if all_samples else kernels.filter(sample=0)


def queue_evaluation(
    submission: Submission, requested_by=None, all_samples: bool = False, reason: str = ""
) -> EvaluationRun:
    """Create an evaluation run and enqueue its job after commit; the submission becomes queued."""
    from leaderboard.submissions import jobs

    queue, device = route(submission.hardware)
    with transaction.atomic():
        run = EvaluationRun.objects.create(
            submission=submission,
            harness_version=harness_version(),
            mode=settings.EVALUATOR["MODE"],
            device=device,
            hardware=submission.hardware,
            queue=queue,
            all_samples=all_samples,
            requested_by=requested_by,
        )
        total = kernels_in_scope(submission, all_samples).count()
        states.move(submission.pk, Status.QUEUED, f"{reason} on queue {queue}".strip(), total=total, done=0)
        jobs.enqueue_run(run, kernel_count=total)
    return run


def live_run(submission: Submission) -> EvaluationRun | None:
    """A run of the submission still queued or running (an errored submission's pending retry included)."""
    return submission.runs.filter(status__in=LIVE_RUN_STATUSES).order_by("-created", "-pk").first()


def reverify(submission: Submission, requested_by=None, all_samples: bool = False) -> EvaluationRun:
    """Evaluate a submission again with the current harness once its runs have ended; earlier runs stay."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission.pk)
        running = live_run(submission)
        if running or not (submission.is_terminal or submission.status == Status.ERRORED):
            still = f" (run #{running.pk} is {running.status})" if running else ""
            raise SubmissionRefused(
                f"submission #{submission.pk} is {submission.status}{still}; wait until it ends for good"
            )
        reason = f"re-verification with harness {harness_version()}"
        return queue_evaluation(submission, requested_by, all_samples, reason=reason)


def outdated_submissions():
    """Submissions whose newest run used another harness version than the current one."""
    current = harness_version()
    latest = {}
    for run in EvaluationRun.objects.order_by("submission_id", "-created", "-pk"):
        latest.setdefault(run.submission_id, run.harness_version)
    ids = [pk for pk, version in latest.items() if version != current]
    return Submission.objects.filter(pk__in=ids)


def cancel(submission: Submission, reason: str) -> Submission:
    """Cancel a submission that has not finished, with its runs, in one transaction; the jobs are told after
    the commit (if Redis answers), and a queued or running job stops at its next check of the database."""
    from leaderboard.submissions import jobs

    with transaction.atomic():
        submission = states.move(submission.pk, Status.CANCELLED, reason)
        for run in submission.runs.filter(status__in=LIVE_RUN_STATUSES):
            run.status, run.reason, run.finished = EvaluationRun.Status.CANCELLED, reason, timezone.now()
            run.save(update_fields=["status", "reason", "finished"])
            transaction.on_commit(lambda job_id=run.rq_job_id: jobs.cancel_job(job_id))
    return submission
