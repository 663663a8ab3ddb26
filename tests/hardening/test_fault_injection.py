"""Fault injection on the real PostgreSQL and Redis, with real worker processes and the real harness:
a worker SIGKILLed mid-job, Redis restarted with jobs queued (and down during an upload), the database
connection dropped in the middle of a result write, a full work folder. After each: no submission lost,
every one completed or terminal with a reason, no duplicate result or score."""

import contextlib
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter

import pytest
import redis
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection

from leaderboard.models import EvaluationRun, Score, Submission, TaskResult
from leaderboard.submissions.lifecycle import reverify
from leaderboard.submissions.tokens import issue_token
from tests.hardening.harness import ROOT
from tests.submissions.processes import Workers, kill_session, wait_until
from tests.submissions.samples import TORCH_RELU_KERNEL, kernel_name, zip_bytes

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SLOW_KERNEL = TORCH_RELU_KERNEL.replace(
    "return torch.clamp_min", "import time; time.sleep(0.15); return torch.clamp_min"
)
TERMINAL = {"completed", "failed", "cancelled"}


@pytest.fixture
def cpu_fast(evaluation_settings, make_tasks, monkeypatch):
    """Three small level-1 tasks, and workers that time the eager baseline only (no torch.compile)."""
    monkeypatch.setenv("EVALUATOR_BASELINES", "eager")
    evaluation_settings.EVALUATOR = {**evaluation_settings.EVALUATOR, "BASELINES": ["eager"]}
    return make_tasks((1, 1), (1, 2), (1, 3))


@pytest.fixture
def pool(tmp_path, cpu_fast, redis_conn):
    workers = Workers(tmp_path)
    yield workers
    workers.stop_all()


def upload(client, token, kernels: dict[int, str], name: str) -> Submission:
    files = {"runs/fault/" + kernel_name(1, problem): text for problem, text in kernels.items()}
    fields = {
        "bundle": SimpleUploadedFile(f"{name}.zip", zip_bytes(files)),
        "method": name,
        "hardware": "CPU",
    }
    response = client.post("/api/submissions", fields, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 201, response.content
    return Submission.objects.get(pk=response.json()["id"])


@pytest.fixture
def token(user, settings):
    settings.SUBMISSION_QUOTAS = {"per_minute": 50, "active": 50, "per_day": 50}
    return issue_token(user)[1]


def reap(stale_after: float = 1.0) -> None:
    time.sleep(stale_after + 0.5)
    call_command("requeue_stale", "--stale-after", str(stale_after))


def status(submission: Submission) -> str:
    return Submission.objects.get(pk=submission.pk).status


def assert_nothing_lost_nothing_doubled(submissions: list[Submission], allowed=TERMINAL) -> None:
    """Every submission terminal with a reason; one result per kernel and run; one score per key and run."""
    for submission in submissions:
        submission.refresh_from_db()
        assert submission.status in allowed, (submission.pk, submission.status, submission.reason)
        assert submission.reason
        run = submission.current_run
        if submission.status == "completed":
            assert TaskResult.objects.filter(run=run).count() == submission.kernels.filter(sample=0).count()
            assert Score.objects.filter(run=run).exists()
    pairs = Counter(TaskResult.objects.values_list("run_id", "kernel_id"))
    assert max(pairs.values(), default=1) == 1
    keys = Counter(Score.objects.values_list("entry_id", "metric_id", "baseline", "run_id"))
    assert max(keys.values(), default=1) == 1
    completed_runs = set(EvaluationRun.objects.filter(status="completed").values_list("pk", flat=True))
    assert set(Score.objects.exclude(run=None).values_list("run_id", flat=True)) <= completed_runs


def test_a_worker_sigkilled_mid_job(client, token, pool):
    first = upload(client, token, {1: SLOW_KERNEL, 2: TORCH_RELU_KERNEL, 3: TORCH_RELU_KERNEL}, "KillA")
    second = upload(client, token, {1: TORCH_RELU_KERNEL, 2: SLOW_KERNEL}, "KillB")
    worker = pool.start()
    wait_until(lambda: Submission.objects.get(pk=first.pk).done >= 1, 300, what="a first result")
    kill_session(worker.pid)  # the worker, its horse and the harness under it, as a lost machine
    worker.wait(timeout=30)
    assert status(first) == "running"
    reap()
    assert pool.run_burst() == 0, pool.logs()[-3000:]
    assert_nothing_lost_nothing_doubled([first, second], {"completed"})
    assert first.current_run.attempts == 2


@pytest.fixture
def private_redis(tmp_path, settings):
    """A redis-server of this test's own on a free loopback port, which the test may kill and restart."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("no redis-server binary")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"redis://127.0.0.1:{port}/0"
    server = PrivateRedis(binary, port, tmp_path)
    server.start()
    settings.REDIS_URL = url
    settings.RQ_QUEUES = {name: {**queue, "URL": url} for name, queue in settings.RQ_QUEUES.items()}
    yield server
    server.stop()


class PrivateRedis:
    def __init__(self, binary: str, port: int, folder):
        self.binary, self.port, self.folder, self.process = binary, port, folder, None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.folder),
        ]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(self.answers, 30, interval=0.1, what="the private redis-server")

    def answers(self) -> bool:
        with contextlib.suppress(redis.exceptions.RedisError):
            return redis.Redis.from_url(self.url, socket_timeout=1).ping()
        return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


def test_redis_restarted_with_jobs_queued_and_down_during_an_upload(client, token, pool, private_redis):
    pool.env["REDIS_URL"] = private_redis.url
    queued = [
        upload(client, token, {1: TORCH_RELU_KERNEL, 2: TORCH_RELU_KERNEL}, f"Queued{n}") for n in (1, 2)
    ]
    private_redis.stop()  # no persistence: the queued jobs are gone
    during = upload(client, token, {3: TORCH_RELU_KERNEL}, "WhileDown")  # stored; its job cannot be queued
    assert status(during) == "queued"
    private_redis.start()
    reap()  # queued runs whose jobs Redis no longer holds get fresh jobs
    assert all(status(s) == "queued" for s in [*queued, during])
    assert pool.run_burst() == 0, pool.logs()[-3000:]
    assert_nothing_lost_nothing_doubled([*queued, during], {"completed"})


def test_redis_restarted_while_a_job_runs(client, token, pool, private_redis):
    pool.env["REDIS_URL"] = private_redis.url
    running = upload(client, token, {1: SLOW_KERNEL, 2: SLOW_KERNEL, 3: TORCH_RELU_KERNEL}, "RedisRunning")
    waiting = upload(client, token, {1: TORCH_RELU_KERNEL}, "RedisWaiting")
    worker = pool.start()
    wait_until(lambda: Submission.objects.get(pk=running.pk).done >= 1, 300, what="a first result")
    private_redis.stop()
    private_redis.start()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and {status(running), status(waiting)} - TERMINAL:
        if worker.poll() is not None:  # a worker that lost Redis may stop: the supervisor restarts it
            worker = pool.start()
        reap(stale_after=5)
        time.sleep(2)
    assert_nothing_lost_nothing_doubled([running, waiting], {"completed"})


FAULT_TRIGGER = """
CREATE SEQUENCE kb_fault_once;
CREATE FUNCTION kb_fault_stall() RETURNS trigger AS $$
BEGIN
    IF nextval('kb_fault_once') = 1 THEN PERFORM pg_sleep(60); END IF;  -- the first write stalls, once
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER kb_fault_stall BEFORE INSERT ON leaderboard_taskresult
    FOR EACH ROW EXECUTE FUNCTION kb_fault_stall();
"""
REMOVE_TRIGGER = """
DROP TRIGGER IF EXISTS kb_fault_stall ON leaderboard_taskresult;
DROP FUNCTION IF EXISTS kb_fault_stall();
DROP SEQUENCE IF EXISTS kb_fault_once;
"""


@pytest.fixture
def stalled_result_write(db):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (pg_terminate_backend)")
    with connection.cursor() as cursor:
        cursor.execute(FAULT_TRIGGER)
    yield
    with connection.cursor() as cursor:
        cursor.execute(REMOVE_TRIGGER)


def stalled_backend() -> int | None:
    """The server process of the worker's connection, while it is inside the stalled result write."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' "
            "AND query LIKE 'INSERT INTO \"leaderboard_taskresult\"%%' AND pid <> pg_backend_pid()"
        )
        row = cursor.fetchone()
    return row[0] if row else None


def test_the_database_connection_dropped_during_a_result_write(client, token, pool, stalled_result_write):
    submission = upload(
        client, token, {1: TORCH_RELU_KERNEL, 2: TORCH_RELU_KERNEL, 3: TORCH_RELU_KERNEL}, "Drop"
    )
    worker = pool.start()
    wait_until(lambda: stalled_backend() is not None, 300, what="the worker inside a result write")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [stalled_backend()])
    wait_until(lambda: status(submission) in TERMINAL, 300, what="the submission to finish")
    worker.terminate()
    assert_nothing_lost_nothing_doubled([submission], {"completed"})
    events = list(submission.events.values_list("status", "reason"))
    retries = [reason for state, reason in events if state == "errored" and "retrying" in reason]
    assert len(retries) == submission.current_run.attempts - 1 >= 1, events  # every failed attempt recorded


def test_a_full_work_folder_errors_the_run_with_its_reason_and_a_reverification_completes(
    client, token, pool, tmp_path
):
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"], check=False).returncode:
        pytest.skip("needs a private mount namespace for the worker's small tmpfs")
    submission = upload(
        client, token, {1: TORCH_RELU_KERNEL, 2: TORCH_RELU_KERNEL, 3: TORCH_RELU_KERNEL}, "Full"
    )
    work = pool.env["EVALUATOR_WORK_DIR"]
    full_worker = [
        "unshare",
        "-m",
        "sh",
        "-c",
        f'mkdir -p "{work}" && mount -t tmpfs -o size=24k tmpfs "{work}" && exec "$0" "$@"',
        sys.executable,
        "manage.py",
        "evaluation_worker",
        "cpu",
        "--burst",
    ]
    with open(tmp_path / "full-worker.log", "wb") as log:
        worker = subprocess.Popen(full_worker, cwd=ROOT, env=pool.env, stdout=log, stderr=log)
    assert worker.wait(timeout=600) == 0, (tmp_path / "full-worker.log").read_text()[-3000:]
    submission.refresh_from_db()
    assert submission.status == "errored", submission.reason
    assert "No space left on device" in submission.reason
    assert "gave up after 3 attempts" in submission.reason
    assert not submission.counts_against_quota
    assert not Score.objects.filter(entry=submission.entry).exists()
    reverify(submission)
    assert pool.run_burst() == 0, pool.logs()[-3000:]
    assert_nothing_lost_nothing_doubled([submission], {"completed"})
    assert Score.objects.filter(entry=submission.entry).values("run_id").distinct().count() == 1
