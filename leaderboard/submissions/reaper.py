"""Reaping: find runs whose job died or vanished and requeue them, so nothing stays 'running' forever.

A run is stale when it is running but its job has not beaten its heartbeat for `stale_after` seconds
(its worker was killed, the machine lost), or when it is queued but Redis no longer holds a live job for
it (Redis restarted, the enqueue was lost, retries ran out without being recorded). A stale run gets a
fresh job, which resumes from the results already stored; after MAX_ATTEMPTS it is errored for good,
uncharged. A stale run that is no longer its submission's to run (a newer run superseded it, or the
submission already finished) is closed instead, as cancelled. Every worker reaps during its maintenance
(every 10 s, idle or not: workers.py), and `manage.py requeue_stale` does it on demand.
"""

import datetime
import logging
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone
from rq.job import JobStatus

from leaderboard.models import EvaluationRun, Submission
from leaderboard.submissions import jobs, states
from leaderboard.submissions.execution import close_orphan, give_up, orphan_reason

logger = logging.getLogger(__name__)

RunStatus = EvaluationRun.Status
DEFAULT_STALE_AFTER_S = 30
"""Six missed heartbeats (a running job beats every execution.HEARTBEAT_S = 5 s): with maintenance every
10 s, a dead worker's run is requeued 30-40 s after its last heartbeat. A live job wrongly taken for dead
loses nothing: it stops at its next heartbeat (superseded) and the new job resumes from the stored results."""
LIVE_WAITING = {JobStatus.QUEUED, JobStatus.DEFERRED, JobStatus.SCHEDULED, JobStatus.STARTED}


@dataclass(frozen=True)
class Reaped:
    """What the reaper did to one run."""

    run_id: int
    submission_id: int
    action: str  # "requeued", "errored", or "closed" (superseded, or its submission already finished)
    reason: str


def why_stale(run: EvaluationRun, now: datetime.datetime, stale_after: float) -> str | None:
    """Why this run's job is dead, or None if it looks alive."""
    cutoff = now - datetime.timedelta(seconds=stale_after)
    last = run.heartbeat or run.started or run.created
    if last >= cutoff:
        return None
    if run.status == RunStatus.RUNNING:
        return f"no heartbeat for {int((now - last).total_seconds())} s (worker lost)"
    job = jobs.job_state(run.rq_job_id) if run.rq_job_id else None
    if job not in LIVE_WAITING:
        return f"queued, but its job is {job or 'missing from Redis'}"
    return None


def candidates():
    return EvaluationRun.objects.filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).select_related(
        "submission"
    )


def reap(stale_after: float = DEFAULT_STALE_AFTER_S, dry_run: bool = False) -> list[Reaped]:
    """Requeue (or give up on) every stale run; return what was done."""
    now = timezone.now()
    done = []
    for run in candidates():
        reason = why_stale(run, now, stale_after)
        if reason is None:
            continue
        if dry_run:
            done.append(Reaped(run.pk, run.submission_id, "would requeue", reason))
            continue
        outcome = requeue(run.pk, run.rq_job_id, reason)
        if outcome:
            done.append(outcome)
    return done


def requeue(run_id: int, seen_job_id: str, reason: str) -> Reaped | None:
    """Give a stale run a fresh job, error it after MAX_ATTEMPTS, or close it if it is no longer its
    submission's to run; None if it changed meanwhile."""
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().select_related("submission").get(pk=run_id)
        if run.rq_job_id != seen_job_id or run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            return None
        orphaned = orphan_reason(run)
        if orphaned:
            close_orphan(run, orphaned)
            transaction.on_commit(lambda: jobs.forget_job(seen_job_id))
            return Reaped(run.pk, run.submission_id, "closed", orphaned)
        if run.attempts >= jobs.MAX_ATTEMPTS:
            give_up(run, reason)
            transaction.on_commit(lambda: jobs.forget_job(seen_job_id))
            return Reaped(run.pk, run.submission_id, "errored", reason)
        run.status, run.reason, run.heartbeat = RunStatus.QUEUED, f"requeued: {reason}", timezone.now()
        run.save(update_fields=["status", "reason", "heartbeat"])
        states.move(run.submission_id, Submission.Status.QUEUED, f"requeued: {reason}")
        transaction.on_commit(lambda: jobs.forget_job(seen_job_id))
        jobs.enqueue_run(run, kernel_count=run.kernels_in_scope().count())
    logger.warning("run %s requeued: %s", run_id, reason)
    return Reaped(run_id, run.submission_id, "requeued", reason)
