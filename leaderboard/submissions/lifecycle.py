"""A stored submission's evaluations: queue a run, re-verify with the current harness, cancel."""

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from leaderboard.models import EvaluationRun, Submission
from leaderboard.submissions import states
from leaderboard.submissions.routing import SubmissionRefused, route

Status = Submission.Status
LIVE_RUN_STATUSES = (EvaluationRun.Status.QUEUED, EvaluationRun.Status.RUNNING)


def harness_version() -> str:
    """The evaluator's version string, read without importing torch."""
    from evaluator import HARNESS_VERSION

    return HARNESS_VERSION


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
        total = run.kernels_in_scope().count()
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
