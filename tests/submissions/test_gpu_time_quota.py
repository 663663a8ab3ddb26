"""The GPU-time quota: accelerator time a user's runs held in the last day, running ones up to now;
CPU runs, infrastructure failures and day-old runs are not charged."""

import datetime

import pytest
from django.utils import timezone

from leaderboard.models import EvaluationRun, Submission
from leaderboard.submissions import device_time
from leaderboard.submissions.quotas import QuotaExceeded, check_quota, usage
from tests.submissions.test_tokens_quotas import make_submissions

pytestmark = pytest.mark.django_db


def held(submission, *, minutes: float, ago_h: float = 1.0, device: str = "cuda", running: bool = False):
    started = timezone.now() - datetime.timedelta(hours=ago_h)
    return EvaluationRun.objects.create(
        submission=submission, harness_version="2.0.0", device=device, hardware=submission.hardware,
        status="running" if running else "completed", started=started,
        finished=None if running else started + datetime.timedelta(minutes=minutes),
    )  # fmt: skip


def test_finished_and_running_runs_are_charged_cpu_and_old_ones_not(user):
    make_submissions(user, 4)
    first, second, third, fourth = Submission.objects.filter(user=user)
    held(first, minutes=30)
    held(second, minutes=0, ago_h=0.25, running=True)  # 15 minutes so far
    held(third, minutes=45, device="cpu")
    held(fourth, minutes=60, ago_h=25)  # started more than a day ago
    assert usage(user)["gpu_seconds"] == pytest.approx(45 * 60, abs=5)


def test_runs_of_infrastructure_failures_are_not_charged(user):
    make_submissions(user, 1, status="errored", counts=False)
    held(Submission.objects.get(user=user), minutes=90)
    assert usage(user)["gpu_seconds"] == 0


def test_spent_gpu_time_refuses_the_next_submission(user, settings):
    settings.SUBMISSION_QUOTAS = {"per_day": 100, "per_minute": 100, "active": 100, "gpu_hours_per_day": 1}
    make_submissions(user, 2)
    first, second = Submission.objects.filter(user=user)
    held(first, minutes=40)
    check_quota(user)
    held(second, minutes=20)
    with pytest.raises(
        QuotaExceeded, match=r"GPU-time quota reached: .* 1\.00 h in 24 hours \(at most 1 h\)"
    ):
        check_quota(user)


def test_held_seconds_of_no_runs_is_zero():
    assert device_time.held_seconds(EvaluationRun.objects.none()) == 0.0
