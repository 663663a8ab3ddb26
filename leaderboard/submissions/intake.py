"""A bundle in: validated and stored whole in one transaction, one submission (and entry) per level.

Each level's submission has its evaluation queued (leaderboard.submissions.lifecycle) before the
transaction commits; the job is enqueued once it has.
"""

import datetime
from dataclasses import dataclass, field, replace

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from leaderboard.models import (
    Baseline,
    Entry,
    Hardware,
    KernelSource,
    Method,
    MethodKind,
    MethodOwnership,
    Submission,
    SubmissionKernel,
    Team,
)
from leaderboard.submissions import states
from leaderboard.submissions.bundles import Bundle, check_bundle
from leaderboard.submissions.lifecycle import queue_evaluation
from leaderboard.submissions.quotas import check_quota
from leaderboard.submissions.routing import SubmissionRefused, route
from tasks.models import Task

Status = Submission.Status


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
    suite: str = ""  # the default suite (Task.objects.default_suite) when blank
    public: bool = False  # its kernels become public once verified (default private)
    team: Team | None = None  # submitted under this team (its quota; a new method becomes the team's)
    extra: dict = field(default_factory=dict)


def submit_bundle(user, data: bytes, name: str, details: EntryDetails) -> list[Submission]:
    """Validate a bundle and store it whole in one transaction: one submission (and entry) per level.

    Raises BundleError (every problem named), QuotaExceeded or SubmissionRefused; stores nothing then.
    Evaluation jobs are enqueued only once the transaction commits.
    """
    route(details.hardware)
    details = replace(details, suite=details.suite or Task.objects.default_suite())
    tasks = {task.key: task for task in Task.objects.current(details.suite).select_related("level")}
    bundle = check_bundle(data, name, tasks.keys(), details.suite)
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()  # one upload at a time
        details = replace(details, team=submitting_team(user, details))
        check_quota(user, new=len(bundle.levels), team=details.team)
        method = find_or_create_method(details)
        sources = store_sources(bundle)
        return [
            create_level_submission(user, bundle, level, method, details, sources, tasks)
            for level in bundle.levels
        ]


def submitting_team(user, details: EntryDetails) -> Team | None:
    """The team the upload is under: the one named (the user must be a member), or the method's owner when
    none is named and the user belongs to it. A team's method takes kernels only from its members, under
    it; SubmissionRefused otherwise."""
    team = details.team
    if team is not None and not team.has_member(user):
        raise SubmissionRefused(f"you are not a member of the team {team.name!r}")
    method = Method.objects.named(details.method_name)
    owner = MethodOwnership.objects.filter(method=method).select_related("team").first() if method else None
    if owner is None:
        return team
    if team is None and owner.team.has_member(user):
        return owner.team
    if team != owner.team:
        raise SubmissionRefused(
            f"the method {method.name!r} belongs to the team {owner.team.name!r}: only its members submit "
            "kernels for it, under the team"
        )
    return team


def find_or_create_method(details: EntryDetails) -> Method:
    """The method of that name (case-insensitive), created with the given details if new (and then owned
    by the team submitted under, if any)."""
    method, created = Method.objects.get_or_create_by_name(
        details.method_name,
        kind=details.method_kind,
        backbone=details.backbone,
        agent_models=details.agent_models,
    )
    if created and details.team is not None:
        MethodOwnership.objects.create(method=method, team=details.team)
    return method


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
    n_tasks = Task.objects.level_count(details.suite, level.number)
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
                "team": details.team.slug if details.team else "",
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
        public_kernels=details.public,
        team=details.team,
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
