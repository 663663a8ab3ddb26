"""End to end on the real PostgreSQL and Redis: upload through the API, real worker processes, the real
harness (`python -m evaluator batch`) on the CPU, verified scores; a killed worker; an idempotent re-run."""

import os
import signal
import time

import django_rq
import pytest
from django.core.management import call_command

from leaderboard.models import Baseline, EvaluationRun, Provenance, Score, Submission, TaskResult
from leaderboard.submissions import jobs
from leaderboard.submissions.tokens import issue_token
from tests.submissions.processes import kill_session, session_members, wait_until
from tests.submissions.samples import (
    BROKEN_KERNEL,
    TORCH_GELU_KERNEL,
    TORCH_RELU_KERNEL,
    TRITON_RELU_KERNEL,
    kernel_name,
    zip_bytes,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

RELU, GELU, SUM = 9, 7, 5  # problem ids of level 1 of the built-in suite
BUNDLE = {
    "runs/e2e/" + kernel_name(1, RELU): TRITON_RELU_KERNEL,
    "runs/e2e/" + kernel_name(1, GELU): TORCH_GELU_KERNEL,
    "runs/e2e/" + kernel_name(1, SUM): BROKEN_KERNEL,
    "runs/e2e/" + kernel_name(1, SUM, 1): TORCH_RELU_KERNEL,  # kept, not evaluated: only sample 0 ranks
    "runs/e2e/generation_config.yaml": "backend: triton\n",
}


def upload(client, user) -> Submission:
    from django.core.files.uploadedfile import SimpleUploadedFile

    _, token = issue_token(user)
    response = client.post(
        "/api/submissions",
        {"bundle": SimpleUploadedFile("e2e.zip", zip_bytes(BUNDLE)), "method": "E2E", "hardware": "CPU"},
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 201, response.content
    return Submission.objects.get(pk=response.json()["id"])


def assert_evaluated(submission: Submission) -> EvaluationRun:
    submission.refresh_from_db()
    run = submission.current_run
    assert submission.status == "completed", submission.reason
    assert (submission.done, submission.total) == (3, 3)
    results = {r.task.problem_id: r for r in TaskResult.objects.filter(run=run)}
    assert sorted(results) == sorted([RELU, GELU, SUM])
    assert results[RELU].correct
    assert results[RELU].raw["kernel"]["backend"] == "triton"
    assert results[GELU].correct
    assert results[GELU].speedup_eager > 0
    assert not results[SUM].compiled
    assert results[SUM].error_kind == "compile_error"
    assert run.device == "cpu"
    assert run.environment["device"] == "cpu"
    return run


def test_a_bundle_goes_from_upload_to_verified_scores(client, user, builtin_tasks, workers):
    submission = upload(client, user)
    assert workers.run_burst() == 0, workers.logs()
    run = assert_evaluated(submission)
    scores = Score.objects.filter(entry=submission.entry, run=run)
    assert scores.filter(provenance=Provenance.VERIFIED, baseline=Baseline.EAGER, metric_id="fast_1").exists()
    assert scores.filter(baseline=Baseline.COMPILE).exists()
    correct = scores.get(metric_id="correct_rate", baseline=Baseline.EAGER)
    assert correct.n_tasks == len([key for key in builtin_tasks if key.startswith("level_1_")])
    assert correct.harness_version == run.harness_version
    status = client.get(f"/api/submissions/{submission.pk}").json()
    assert (status["status"], status["done"], status["total"], status["final"]) == ("completed", 3, 3, True)

    # The same job delivered again (a duplicate, a late retry) changes nothing.
    before = (list(TaskResult.objects.values_list("pk", flat=True)), scores.count())
    django_rq.get_queue("cpu").enqueue(jobs.evaluate_run, run.pk, job_id=run.rq_job_id)
    assert workers.run_burst() == 0
    assert (list(TaskResult.objects.values_list("pk", flat=True)), scores.count()) == before
    assert Submission.objects.get(pk=submission.pk).status == "completed"


def wait_for_first_result(submission, timeout=300):
    wait_until(lambda: Submission.objects.get(pk=submission.pk).done >= 1, timeout, what="the first result")


def test_a_worker_killed_mid_job_is_requeued_and_completed(client, user, builtin_tasks, workers, capsys):
    submission = upload(client, user)
    worker = workers.start()
    wait_for_first_result(submission)
    kill_session(worker.pid)  # the worker, its horse and the harness, all at once
    worker.wait(timeout=30)
    first = TaskResult.objects.get()
    assert Submission.objects.get(pk=submission.pk).status == "running"  # stuck, until reaped

    run = submission.current_run
    wait_until(lambda: reaped_now(run), 30, what="the stale run to be requeued")
    assert "requeued: no heartbeat" in capsys.readouterr().out
    assert Submission.objects.get(pk=submission.pk).status == "queued"

    assert workers.run_burst() == 0, workers.logs()
    run = assert_evaluated(submission)
    assert run.attempts == 2
    assert TaskResult.objects.filter(pk=first.pk).exists()  # kept from before the kill, not redone


def reaped_now(run) -> bool:
    time.sleep(1)
    call_command("requeue_stale", "--stale-after", "2")
    return EvaluationRun.objects.get(pk=run.pk).status == EvaluationRun.Status.QUEUED


def test_a_killed_work_horse_is_retried_by_rq(client, user, builtin_tasks, workers):
    submission = upload(client, user)
    worker = workers.start()
    wait_for_first_result(submission)
    batch = [pid for pid in session_members(worker.pid) if b"evaluator\x00batch" in cmdline(pid)]
    [horse] = {parent_of(pid) for pid in batch} - set(batch)  # the harness's parent runs the job
    assert parent_of(horse) == worker.pid
    os.kill(horse, signal.SIGKILL)  # out of memory, say: the worker survives, the harness dies with the horse
    wait_until(lambda: not any(map(is_running, batch)), 30, what="the harness to die with its horse")
    wait_until(lambda: Submission.objects.get(pk=submission.pk).status == "completed", 400, what="completion")
    run = assert_evaluated(submission)
    assert run.attempts == 2
    reasons = list(submission.events.values_list("status", "reason"))
    assert any(status == "errored" and "process running the job died" in reason for status, reason in reasons)


def is_running(pid: int) -> bool:
    """Whether a process exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            return file.read()
    except OSError:
        return b""
