"""Job orchestration on the real Redis: superseded and finished jobs do nothing, failures retry, reaping."""

import datetime

import django_rq
import pytest
from django.core.management import call_command
from django.utils import timezone

from evaluator import jobs
from leaderboard.models import EvaluationRun, Submission
from leaderboard.submissions import execution, reaper
from leaderboard.submissions.services import EntryDetails, submit_bundle
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
    from leaderboard.submissions.services import cancel

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
