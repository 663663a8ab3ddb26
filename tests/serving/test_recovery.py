"""Recovery without an operator, with real worker processes: an idle worker requeues a dead worker's run on
its own timer, a worker outlives a Redis outage (and requeues what was uploaded meanwhile), the supervisor
restarts a worker that died, and a failed attempt is recorded after the database connection was lost."""

import os
import signal
import sys
import threading

import django_rq
import pytest
from django.conf import settings
from django.db import connection
from rq import Worker

from leaderboard.models import EvaluationRun, Submission
from leaderboard.serving.supervisor import Program, Supervisor, session_members
from leaderboard.submissions import execution, jobs, reaper, workers
from tests.hardening.test_fault_injection import SLOW_KERNEL, status, upload
from tests.submissions.processes import kill_session, wait_until, worker_database_url
from tests.submissions.samples import TORCH_RELU_KERNEL

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_dead_workers_run_is_requeued_well_within_a_minute_by_design():
    """The bound: six missed heartbeats make a run stale, and every worker looks every 10 s, idle or not."""
    assert execution.HEARTBEAT_S * 6 == reaper.DEFAULT_STALE_AFTER_S
    assert reaper.DEFAULT_STALE_AFTER_S + workers.MAINTENANCE_INTERVAL_S <= 60
    assert workers.EvaluationWorker.dequeue_timeout.fget(None) == workers.MAINTENANCE_INTERVAL_S


def test_an_idle_worker_requeues_a_dead_workers_run_on_its_own(client, token, pool):
    submission = upload(client, token, {1: SLOW_KERNEL, 2: SLOW_KERNEL, 3: TORCH_RELU_KERNEL}, "Idle")
    busy = pool.start()
    wait_until(lambda: Submission.objects.get(pk=submission.pk).done >= 1, 300, what="a first result")
    idle = pool.start()  # the queue is empty now: this one waits, and maintains on its timer
    kill_session(busy.pid)  # the busy worker, its horse and the harness, as a lost machine
    busy.wait(timeout=30)
    # No requeue_stale here: the idle worker's maintenance finds the run, requeues it and then runs it.
    wait_until(lambda: status(submission) == "completed", 400, what="the run to be requeued and completed")
    run = EvaluationRun.objects.get(pk=submission.current_run.pk)
    assert run.attempts == 2
    assert "requeued: no heartbeat" in pool.logs()
    assert idle.poll() is None


def test_a_worker_outlives_a_redis_outage_and_requeues_what_was_uploaded_meanwhile(
    client, token, pool, private_redis
):
    pool.env["REDIS_URL"] = private_redis.url
    worker = pool.start()
    connection_to_redis = django_rq.get_connection()
    wait_until(lambda: Worker.all(connection=connection_to_redis), 60, what="the worker to register")
    private_redis.stop()
    during = upload(client, token, {1: TORCH_RELU_KERNEL}, "DuringOutage")  # stored; no job can be queued
    wait_until(lambda: "Redis" in pool.logs(), 60, what="the worker to notice the outage")
    assert worker.poll() is None
    private_redis.start()  # empty: no persistence
    wait_until(lambda: status(during) == "completed", 300, what="the upload to be requeued and completed")
    assert worker.poll() is None  # the same process throughout
    assert "requeued: queued, but its job is missing from Redis" in pool.logs()


def worker_program(tmp_path) -> Program:
    env = {
        **os.environ,
        "DATABASE_URL": worker_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "EVALUATOR_WORK_DIR": str(tmp_path / "work"),
        "PYTHONUNBUFFERED": "1",
    }
    command = [sys.executable, "manage.py", "evaluation_worker", "cpu"]
    return Program("worker", command, env, log=tmp_path / "worker.log")


def test_the_supervisor_restarts_a_dead_worker_and_stops_everything(tmp_path, redis_conn):
    program = worker_program(tmp_path)
    supervisor = Supervisor([program], settings.BASE_DIR)
    thread = threading.Thread(target=supervisor.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: len(Worker.all(connection=redis_conn)) == 1, 60, what="the worker to register")
        first = program.process.pid
        os.kill(first, signal.SIGKILL)
        wait_until(
            lambda: program.process.pid != first and len(Worker.all(connection=redis_conn)) >= 1,
            60,
            what="the supervisor to start the worker again",
        )
        assert program.restarts == 1
        assert session_members(first) == []  # nothing of the dead worker is left (RQ's scheduler, say)
        wait_until(lambda: any(w.pid == program.process.pid for w in Worker.all(connection=redis_conn)), 60)
    finally:
        supervisor.stop()
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert program.process.poll() is not None
    assert session_members(program.process.pid) == []


@pytest.fixture
def claimed_run(client, token, cpu_fast, redis_conn):
    submission = upload(client, token, {1: TORCH_RELU_KERNEL}, "Dropped")
    run = submission.current_run
    execution.claim(run.pk, run.rq_job_id, "w")
    return EvaluationRun.objects.get(pk=run.pk)


def test_a_failed_attempt_is_recorded_after_the_database_connection_was_lost(claimed_run):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (pg_terminate_backend)")
    import psycopg

    connection.ensure_connection()
    ours = connection.connection.info.backend_pid
    db = connection.settings_dict
    other = {"dbname": db["NAME"], "user": db["USER"], "host": db["HOST"], "port": db["PORT"]}
    with psycopg.connect(**other, password=db["PASSWORD"] or None, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [ours])  # killed from the server's side ...
    # ... as when the database restarted mid-job: the failure is recorded on a new connection
    jobs.record_failure(
        claimed_run.pk, claimed_run.rq_job_id, "OperationalError", final=False, details="gone"
    )
    run = EvaluationRun.objects.get(pk=claimed_run.pk)
    assert (run.status, run.reason) == ("queued", "attempt 1 failed: OperationalError")
    assert run.harness_log == "gone"
    assert "retrying: OperationalError" in Submission.objects.get(pk=run.submission_id).reason
