"""Job orchestration on the real Redis: superseded and finished jobs do nothing, failures retry, reaping."""

import datetime
import json

import django_rq
import pytest
from django.core.management import call_command
from django.utils import timezone

from leaderboard.models import EvaluationRun, Score, Submission
from leaderboard.submissions import execution, jobs, reaper
from leaderboard.submissions.intake import EntryDetails, submit_bundle
from leaderboard.submissions.lifecycle import queue_evaluation, reverify
from leaderboard.submissions.routing import SubmissionRefused
from tests.submissions.samples import TORCH_RELU_KERNEL, kernel_name, zip_bytes

pytestmark = pytest.mark.django_db(transaction=True)

RunStatus = EvaluationRun.Status


@pytest.fixture
def queued_run(user, cpu, tasks_l1, redis_conn):
    data = zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL})
    [submission] = submit_bundle(user, data, "r.zip", EntryDetails(method_name="J", hardware=cpu))
    return submission.current_run


def age(run, seconds):
    past = timezone.now() - datetime.timedelta(seconds=seconds)
    EvaluationRun.objects.filter(pk=run.pk).update(created=past, heartbeat=past)


def test_the_job_carries_retries_a_timeout_and_a_failure_callback(queued_run):
    job = django_rq.get_queue("cpu").fetch_job(queued_run.rq_job_id)
    assert job.args == (queued_run.pk,)
    assert job.retries_left == jobs.MAX_ATTEMPTS - 1
    assert job.timeout == jobs.job_timeout(1)
    assert job.failure_callback is jobs.job_failed


def test_a_job_that_is_not_the_runs_current_one_does_nothing(queued_run):
    assert execution.execute_run(queued_run.pk, "run-0-someone-else") == "skipped"
    queued_run.refresh_from_db()
    assert (queued_run.status, queued_run.attempts) == (RunStatus.QUEUED, 0)


def test_a_job_for_a_cancelled_submission_does_nothing(queued_run):
    from leaderboard.submissions.lifecycle import cancel

    cancel(queued_run.submission, "stop")
    assert execution.execute_run(queued_run.pk, queued_run.rq_job_id) == "skipped"


def test_an_infrastructure_failure_retries_then_gives_up_uncharged(queued_run):
    execution.claim(queued_run.pk, queued_run.rq_job_id, "w1")
    execution.record_infrastructure_failure(queued_run.pk, queued_run.rq_job_id, "disk full", final=False)
    submission = Submission.objects.get(pk=queued_run.submission_id)
    assert submission.status == "errored"
    assert "retrying: disk full" in submission.reason
    assert submission.counts_against_quota
    execution.claim(queued_run.pk, queued_run.rq_job_id, "w1")
    execution.record_infrastructure_failure(queued_run.pk, queued_run.rq_job_id, "disk full", final=True)
    submission.refresh_from_db()
    assert submission.status == "errored"
    assert "gave up after 2 attempts" in submission.reason
    assert not submission.counts_against_quota
    assert EvaluationRun.objects.get(pk=queued_run.pk).status == RunStatus.ERRORED


def test_a_queued_run_whose_job_redis_lost_is_requeued(queued_run, redis_conn):
    redis_conn.flushdb()  # Redis restarted without persistence
    assert reaper.reap(stale_after=60) == []  # too recent to judge
    age(queued_run, 120)
    [reaped] = reaper.reap(stale_after=60)
    assert (reaped.action, reaped.reason) == ("requeued", "queued, but its job is missing from Redis")
    fresh = EvaluationRun.objects.get(pk=queued_run.pk)
    assert fresh.rq_job_id != queued_run.rq_job_id
    assert django_rq.get_queue("cpu").job_ids == [fresh.rq_job_id]
    assert Submission.objects.get(pk=queued_run.submission_id).reason.startswith("requeued: queued, but")


def test_a_running_run_without_heartbeat_is_requeued_and_its_old_job_forgotten(queued_run, capsys):
    execution.claim(queued_run.pk, queued_run.rq_job_id, "lost-worker")
    age(queued_run, 600)
    call_command("requeue_stale", "--stale-after", "300")
    assert "requeued: no heartbeat for" in capsys.readouterr().out
    fresh = EvaluationRun.objects.get(pk=queued_run.pk)
    assert fresh.status == RunStatus.QUEUED
    assert fresh.rq_job_id != queued_run.rq_job_id
    assert jobs.job_state(queued_run.rq_job_id) is None
    assert execution.execute_run(fresh.pk, queued_run.rq_job_id) == "skipped"  # the old job, if it woke up


def test_a_run_out_of_attempts_is_errored_by_the_reaper(queued_run):
    EvaluationRun.objects.filter(pk=queued_run.pk).update(status="running", attempts=jobs.MAX_ATTEMPTS)
    age(queued_run, 600)
    [reaped] = reaper.reap(stale_after=300)
    assert reaped.action == "errored"
    submission = Submission.objects.get(pk=queued_run.submission_id)
    assert submission.status == "errored"
    assert not submission.counts_against_quota


def test_live_runs_are_left_alone(queued_run):
    age(queued_run, 600)  # old, but its job is still queued in Redis
    assert reaper.reap(stale_after=300) == []
    execution.claim(queued_run.pk, queued_run.rq_job_id, "w")  # running, with a fresh heartbeat
    assert reaper.reap(stale_after=300) == []


def test_a_run_with_nothing_to_evaluate_fails_instead_of_completing(queued_run):
    queued_run.submission.kernels.filter(sample=0).update(sample=1)  # stored before sample 0 was required
    assert execution.execute_run(queued_run.pk, queued_run.rq_job_id) == RunStatus.FAILED
    submission = Submission.objects.get(pk=queued_run.submission_id)
    assert submission.status == "failed"
    assert submission.reason.startswith("nothing was evaluated: the submission has no sample-0 kernel")
    assert not Score.objects.filter(run=queued_run).exists()


def test_reverification_waits_while_a_retry_is_pending(queued_run):
    execution.claim(queued_run.pk, queued_run.rq_job_id, "w1")
    execution.record_infrastructure_failure(queued_run.pk, queued_run.rq_job_id, "disk full", final=False)
    submission = Submission.objects.get(pk=queued_run.submission_id)
    assert submission.status == "errored"
    with pytest.raises(SubmissionRefused, match=rf"errored \(run #{queued_run.pk} is queued\); wait"):
        reverify(submission)
    assert submission.runs.count() == 1
    execution.claim(queued_run.pk, queued_run.rq_job_id, "w1")
    execution.record_infrastructure_failure(queued_run.pk, queued_run.rq_job_id, "disk full", final=True)
    assert reverify(submission).pk != queued_run.pk  # errored for good: it may go round again


def test_a_job_cannot_claim_a_run_that_a_newer_run_superseded(queued_run):
    newer = queue_evaluation(queued_run.submission, reason="a second run")  # as before reverify waited
    assert execution.claim(queued_run.pk, queued_run.rq_job_id, "old-retry") is None
    queued_run.refresh_from_db()
    assert (queued_run.status, queued_run.reason) == (RunStatus.CANCELLED, f"superseded by run #{newer.pk}")
    assert execution.claim(newer.pk, newer.rq_job_id, "w2") is not None


def test_the_reaper_closes_a_stale_run_that_is_no_longer_its_submissions(queued_run):
    execution.claim(queued_run.pk, queued_run.rq_job_id, "lost-worker")
    newer = queue_evaluation(queued_run.submission, reason="a second run")
    age(queued_run, 600)
    [reaped] = reaper.reap(stale_after=300)
    assert (reaped.run_id, reaped.action, reaped.reason) == (
        queued_run.pk,
        "closed",
        f"superseded by run #{newer.pk}",
    )
    assert EvaluationRun.objects.get(pk=queued_run.pk).status == RunStatus.CANCELLED
    assert EvaluationRun.objects.get(pk=newer.pk).status == RunStatus.QUEUED


def test_the_reaper_closes_a_stale_run_of_a_finished_submission(queued_run):
    execution.claim(queued_run.pk, queued_run.rq_job_id, "w")
    Submission.objects.filter(pk=queued_run.submission_id).update(status="completed")
    age(queued_run, 600)
    [reaped] = reaper.reap(stale_after=300)
    assert (reaped.action, reaped.reason) == ("closed", "its submission is already completed")
    assert EvaluationRun.objects.get(pk=queued_run.pk).status == RunStatus.CANCELLED
    assert reaper.reap(stale_after=300) == []


SECRET_LOG = "HOSTNAME=gpu-node-7 USER=svc-eval PWD=/srv/leaderboard/work"


def test_the_harness_log_is_kept_for_the_owner_not_shown_to_everyone(queued_run, client, settings, tmp_path):
    fake_python = tmp_path / "fake-python"
    fake_python.write_text(f"#!/bin/sh\necho '{SECRET_LOG}'\nexit 1\n")
    fake_python.chmod(0o755)
    settings.EVALUATOR = {**settings.EVALUATOR, "PYTHON": str(fake_python)}
    with pytest.raises(execution.HarnessFailure) as raised:
        execution.execute_run(queued_run.pk, queued_run.rq_job_id, "w")
    execution.record_infrastructure_failure(
        queued_run.pk, queued_run.rq_job_id, jobs.describe(raised.value), final=False
    )
    submission = Submission.objects.get(pk=queued_run.submission_id)
    public = client.get(f"/api/submissions/{submission.pk}").json()["reason"]
    assert public.endswith("retrying: HarnessFailure: the harness exited with status 1")
    for url in (f"/submissions/{submission.pk}/", f"/runs/{queued_run.pk}/"):
        assert SECRET_LOG not in client.get(url).content.decode()
    assert SECRET_LOG in EvaluationRun.objects.get(pk=queued_run.pk).harness_log
    client.force_login(submission.user)
    for url in (f"/submissions/{submission.pk}/", f"/runs/{queued_run.pk}/"):
        assert SECRET_LOG in client.get(url).content.decode()


def test_harness_errors_are_kept_for_the_owner_and_counted_in_public(queued_run, tmp_path):
    log = tmp_path / "harness.log"
    log.write_text("batch started\n")
    errors = ["level_1_problem_1_sample_0_kernel.py: cannot write /srv/leaderboard/work/run-1/out"]
    with pytest.raises(execution.HarnessFailure) as raised:
        execution.check_complete(queued_run, 0, log, errors)
    assert str(raised.value) == "the harness reported an error of its own for 1 kernel(s)"
    harness_log = EvaluationRun.objects.get(pk=queued_run.pk).harness_log
    assert harness_log == f"{errors[0]}\nbatch started"


@pytest.mark.parametrize("budget", [None, 800.0])
def test_the_worker_s_timing_budget_reaches_the_manifest(queued_run, settings, tmp_path, budget):
    settings.EVALUATOR = {**settings.EVALUATOR, "TIMING_BUDGET_MS": budget}
    kernels = list(execution.pending_kernels(queued_run))
    for folder in ("tasks", "kernels"):
        (tmp_path / folder).mkdir()
    manifest = json.loads(execution.write_inputs(queued_run, kernels, tmp_path).read_text())
    assert manifest.get("timing_budget_ms") == budget
