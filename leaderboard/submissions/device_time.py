"""Accelerator time a submitter's runs held: what the GPU-time quota counts (quotas.py).

A run holds its worker's GPU from the moment the worker starts it until it finishes (compiling its kernels
included: the GPU is reserved all the while), so a run's charge is `finished - started`, or `now - started`
while it runs. Runs on the CPU queues hold no accelerator and are not charged; runs of submissions that an
infrastructure failure released from the quota (`counts_against_quota` false) are not either. A single run
is bounded by its RQ job timeout (jobs.job_timeout) and each kernel by the harness's own limits, which scale
with the task's measured reference time (evaluator/policy.py), so a bundle of spinners cannot hold a GPU
past its bound and what it held is charged here.
"""

import datetime

from django.db.models import DurationField, ExpressionWrapper, F, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from leaderboard.models import EvaluationRun

CHARGE_WINDOW = datetime.timedelta(days=1)


def charged_runs(submissions, since: datetime.datetime):
    """Accelerator runs of the given (charged) submissions started since the given moment."""
    return EvaluationRun.objects.filter(
        submission__in=submissions, device="cuda", started__isnull=False, started__gte=since
    )


def held_seconds(runs, now: datetime.datetime | None = None) -> float:
    """Seconds of accelerator time the runs held, a running one up to now."""
    now = now or timezone.now()
    held = ExpressionWrapper(Coalesce(F("finished"), Value(now)) - F("started"), output_field=DurationField())
    total = runs.aggregate(total=Sum(held))["total"]
    return max(total.total_seconds(), 0.0) if total else 0.0


def seconds_used(submissions, now: datetime.datetime | None = None) -> float:
    """Accelerator seconds the submissions' runs held in the last day."""
    now = now or timezone.now()
    return held_seconds(charged_runs(submissions, now - CHARGE_WINDOW), now)
