"""The RQ jobs of the site: enqueue a run's job after commit, run it, map failures to retries.

Jobs take an EvaluationRun id and re-read the database; the work itself (work folder, the
`python -m evaluator batch` subprocess, ingesting results, scores) is in leaderboard.submissions.execution.
Infrastructure failures raise, so RQ's Retry re-runs the job; they never charge the user's quota. A failed
attempt is recorded even when the failure was a lost database connection: the write reconnects first.
This module never imports torch (nor anything of `evaluator`): the harness runs in its own process.
"""

import functools
import logging
import time
import uuid

import django_rq
from django.conf import settings
from django.db import close_old_connections, connections, transaction
from django.db.utils import InterfaceError, OperationalError
from redis.exceptions import RedisError
from rq import Callback, Retry, get_current_job
from rq.command import send_stop_job_command
from rq.exceptions import AbandonedJobError, InvalidJobOperation, NoSuchJobError
from rq.job import Job, JobStatus

from leaderboard.submissions import execution
from leaderboard.submissions.execution import MAX_ATTEMPTS

logger = logging.getLogger(__name__)

RETRY_INTERVALS = [5, 30]
"""Seconds before each RQ retry (a worker started with the scheduler moves them back to the queue)."""

RECONNECT_DELAYS_S = (0.5, 2.0, 5.0)
"""Pauses before each new try of a failure record whose database connection was lost."""

BASE_TIMEOUT_S = 900
PER_KERNEL_TIMEOUT_S = 300
MAX_TIMEOUT_S = 12 * 3600


def job_timeout(kernel_count: int) -> int:
    """RQ's hard limit for one attempt of a run: generous, since the harness has per-kernel timeouts."""
    return min(BASE_TIMEOUT_S + PER_KERNEL_TIMEOUT_S * kernel_count, MAX_TIMEOUT_S)


def retry_policy(attempts_so_far: int) -> Retry | None:
    """RQ retries left for a new job of a run that has already been attempted this many times."""
    left = MAX_ATTEMPTS - attempts_so_far - 1
    intervals = getattr(settings, "EVALUATION_RETRY_INTERVALS", RETRY_INTERVALS)
    return Retry(max=left, interval=intervals) if left > 0 else None


def enqueue_run(run, kernel_count: int) -> str:
    """Give the run a fresh job id and enqueue its job once the surrounding transaction commits.

    If Redis cannot be reached then, the run stays queued in the database (the source of truth) and the
    reaper gives it a job once Redis answers again; the caller (an upload) is not failed for it.
    """
    job_id = f"run-{run.pk}-{uuid.uuid4().hex[:12]}"
    type(run).objects.filter(pk=run.pk).update(rq_job_id=job_id)
    run.rq_job_id = job_id
    options = {
        "job_id": job_id,
        "job_timeout": job_timeout(kernel_count),
        "retry": retry_policy(run.attempts),
        "on_failure": Callback(job_failed),
        "result_ttl": 24 * 3600,
        "failure_ttl": 7 * 24 * 3600,
        "description": f"evaluate run #{run.pk} of submission #{run.submission_id}",
    }
    transaction.on_commit(functools.partial(push_job, run.queue, run.pk, options))
    return job_id


def push_job(queue: str, run_id: int, options: dict) -> None:
    """Put a run's job on its queue now; an unreachable Redis is logged and left to the reaper."""
    try:
        django_rq.get_queue(queue, commit_mode="auto").enqueue(evaluate_run, run_id, **options)
    except RedisError as error:
        logger.warning("run %s: Redis unreachable, its job waits for the reaper: %s", run_id, error)


def evaluate_run(run_id: int) -> str:
    """The job: evaluate one run. Returns a short outcome; raises on infrastructure failure (retried)."""
    job = get_current_job()
    worker = job.worker_name if job else ""
    try:
        return execution.execute_run(run_id, job.id, worker=worker or "")
    except Exception as error:
        final = not (job and job.retries_left)
        details = "" if isinstance(error, execution.HarnessFailure) else f"{type(error).__name__}: {error}"
        record_failure(run_id, job.id, describe(error), final=final, details=details)
        raise


def describe(error: BaseException) -> str:
    """The public reason of a failed attempt. The harness's messages are generic by construction and an
    OSError is told by its errno's text ('No space left on device'); any other error by its type alone,
    since its text (a database or Redis error's) may name hosts, users and paths."""
    if isinstance(error, execution.HarnessFailure):
        return f"HarnessFailure: {error}"[:2000]
    if isinstance(error, OSError) and error.strerror:
        return f"{type(error).__name__}: {error.strerror}"
    return type(error).__name__


def record_failure(run_id: int, job_id: str, reason: str, final: bool, details: str = "") -> None:
    """Record a failed attempt, reconnecting first if the database connection was lost (the usual reason
    an attempt failed in the first place). `details` go where only the owner and staff read them."""
    for delay in (*RECONNECT_DELAYS_S, None):
        close_old_connections()  # drops a connection that errored and is no longer usable
        try:
            execution.record_infrastructure_failure(run_id, job_id, reason, final, details=details)
            return
        except (OperationalError, InterfaceError) as error:
            connections.close_all()
            if delay is None:
                raise
            logger.warning(
                "run %s: recording the failed attempt: %s; reconnecting in %s s", run_id, error, delay
            )
            time.sleep(delay)


def job_failed(job: Job, connection, exc_type, exc_value, traceback) -> None:
    """RQ failure callback: records worker loss (abandoned jobs) that never reached evaluate_run's handler."""
    if exc_type is not AbandonedJobError:
        return
    try:
        record_failure(job.args[0], job.id, "the worker running it was lost", final=not job.retries_left)
    finally:
        connections.close_all()  # runs in a worker's main process, which forks later


def work_horse_killed(job: Job, retpid: int, ret_val: int, rusage) -> None:
    """Worker hook: the forked process running a job died (killed, out of memory) before it could report."""
    reason = f"the process running the job died (wait status {ret_val})"
    try:
        record_failure(job.args[0], job.id, reason, final=not job.retries_left)
    finally:
        connections.close_all()  # runs in the worker's main process, which forks later


def job_state(job_id: str) -> str | None:
    """RQ's status of a job ('queued', 'started', 'scheduled', 'failed' …), or None if Redis lost it."""
    try:
        job = Job.fetch(job_id, connection=django_rq.get_connection())
        return job.get_status(refresh=True)
    except (NoSuchJobError, InvalidJobOperation):
        return None


def cancel_job(job_id: str) -> None:
    """Stop a job if it runs and cancel it if it waits; a job already gone, or Redis unreachable, is fine.

    The run is cancelled in the database before this is called (after the commit), and the database is what
    counts: a job that still starts finds its run cancelled and does nothing, and a running one stops at its
    next heartbeat.
    """
    if not job_id:
        return
    try:
        connection = django_rq.get_connection()
        job = Job.fetch(job_id, connection=connection)
        if job.get_status() == JobStatus.STARTED:
            send_stop_job_command(connection, job_id)
        else:
            job.cancel()
    except (NoSuchJobError, InvalidJobOperation):
        logger.info("job %s is already gone", job_id)
    except RedisError as error:
        logger.warning(
            "job %s not told to stop, Redis is unreachable (its run is cancelled): %s", job_id, error
        )


def forget_job(job_id: str) -> None:
    """Remove a dead job (its worker lost) from Redis so that RQ's own cleanup does not retry it too."""
    connection = django_rq.get_connection()
    try:
        job = Job.fetch(job_id, connection=connection)
    except NoSuchJobError:
        return
    job.delete(remove_from_queue=True)
