"""Per-user and per-team quotas and rate limits on submissions; infrastructure failures never count against
them.

Defaults can be overridden in settings with SUBMISSION_QUOTAS = {"per_day": …, "active": …, "per_minute": …,
"gpu_hours_per_day": …}. The GPU-time quota counts the accelerator time the user's runs held in the last
day (device_time.py); once it is spent, new submissions are refused until enough of it is a day old.
A submission under a team counts against the team's quota (the team's submissions, whoever made them, and
their GPU time), SUBMISSION_TEAM_QUOTAS overriding those defaults for teams. Staff users are exempt.
Counts come from the database, so every web process sees the same numbers.

A refused upload (bad fields, a bad or oversized bundle) counts against the per-minute rate limit like a
submission: refusing costs the server work too (parsing the bundle), so an upload over the rate limit is
answered 429 before its bundle is read. The refusals are counted per user in the database's windowed
counter table (`WindowedCounter`, which the login throttle counts failures in), under keys of their own.
"""

import datetime
from dataclasses import dataclass, replace

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from leaderboard.models import Submission, WindowedCounter
from leaderboard.submissions import device_time

RATE_WINDOW = datetime.timedelta(minutes=1)


@dataclass(frozen=True)
class Quota:
    """How many submissions a user may make."""

    per_day: int = 20
    active: int = 3
    per_minute: int = 3
    gpu_hours_per_day: float = 6.0


class QuotaExceeded(Exception):
    """A submission over quota; `retry_after` is a hint in seconds (HTTP 429 Retry-After)."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


def current_quota(team=None) -> Quota:
    quota = replace(Quota(), **getattr(settings, "SUBMISSION_QUOTAS", {}))
    if team is not None:
        quota = replace(quota, **getattr(settings, "SUBMISSION_TEAM_QUOTAS", {}))
    return quota


def owned(user, team=None):
    """The submissions a quota counts: the team's when submitting under a team, else the user's own."""
    return Submission.objects.filter(team=team) if team is not None else Submission.objects.filter(user=user)


def charged(user, team=None):
    """The submissions that count against the quota (errored-by-infrastructure ones do not)."""
    return owned(user, team).filter(counts_against_quota=True)


def refusal_key(user) -> str:
    return f"upload-refused:{user.pk}"


def count_refusal(user) -> None:
    """Count a refused upload against the user's rate limit (one atomic update, or a new window)."""
    now = timezone.now()
    counters = WindowedCounter.objects.filter(key=refusal_key(user))
    if counters.filter(window_started__gt=now - RATE_WINDOW).update(count=F("count") + 1):
        return
    try:
        with transaction.atomic():
            counters.update_or_create(key=refusal_key(user), defaults={"count": 1, "window_started": now})
    except IntegrityError:  # another process opened the window at the same moment: count in it
        counters.update(count=F("count") + 1)


def recent_refusals(user, now: datetime.datetime) -> int:
    counter = WindowedCounter.objects.filter(
        key=refusal_key(user), window_started__gt=now - RATE_WINDOW
    ).first()
    return counter.count if counter else 0


def usage(user, now: datetime.datetime | None = None, team=None) -> dict[str, int]:
    """Counts the quota is checked against (the team's when submitting under a team)."""
    now = now or timezone.now()
    mine = charged(user, team)
    submitted = owned(user, team).filter(created__gte=now - RATE_WINDOW).count()
    return {
        "per_day": mine.filter(created__gte=now - datetime.timedelta(days=1)).count(),
        "active": mine.filter(status__in=Submission.ACTIVE).count(),
        "per_minute": submitted + recent_refusals(user, now),
        "gpu_seconds": device_time.seconds_used(mine, now),
    }


def check_rate(user) -> None:
    """Raise QuotaExceeded if one more upload attempt would take the user over the rate limit (checked
    before a bundle is read; the other limits need the bundle's levels and are checked when it is stored)."""
    if user.is_staff:
        return
    quota = current_quota()
    if usage(user)["per_minute"] + 1 > quota.per_minute:
        raise QuotaExceeded(
            f"rate limit: at most {quota.per_minute} uploads a minute, refused ones included", retry_after=60
        )


def check_quota(user, new: int = 1, team=None) -> None:
    """Raise QuotaExceeded if `new` more submissions would take the user (or the team submitted under) over
    any limit."""
    if user.is_staff:
        return
    quota, used = current_quota(team), usage(user, team=team)
    whose = f"the team {team}: " if team is not None else ""
    if used["per_minute"] + new > quota.per_minute:
        raise QuotaExceeded(
            f"{whose}rate limit: at most {quota.per_minute} uploads a minute, refused ones included",
            retry_after=60,
        )
    if used["active"] + new > quota.active:
        raise QuotaExceeded(
            f"{whose}at most {quota.active} submissions may be queued or running at once "
            f"({used['active']} are); wait for one to finish",
            retry_after=300,
        )
    if used["per_day"] + new > quota.per_day:
        raise QuotaExceeded(
            f"{whose}daily quota reached: {quota.per_day} submissions in 24 hours ({used['per_day']} used)",
            retry_after=3600,
        )
    if used["gpu_seconds"] >= quota.gpu_hours_per_day * 3600:
        raise QuotaExceeded(
            f"{whose}GPU-time quota reached: the runs held a GPU for {used['gpu_seconds'] / 3600:.2f} h in "
            f"24 hours (at most {quota.gpu_hours_per_day:g} h)",
            retry_after=3600,
        )
