"""Per-user quotas and rate limits on submissions; infrastructure failures never count against them.

Defaults can be overridden in settings with SUBMISSION_QUOTAS = {"per_day": …, "active": …, "per_minute": …}.
Staff users are exempt. Counts come from the database, so every web process sees the same numbers.
"""

import datetime
from dataclasses import dataclass, replace

from django.conf import settings
from django.utils import timezone

from leaderboard.models import Submission


@dataclass(frozen=True)
class Quota:
    """How many submissions a user may make."""

    per_day: int = 20
    active: int = 3
    per_minute: int = 3


class QuotaExceeded(Exception):
    """A submission over quota; `retry_after` is a hint in seconds (HTTP 429 Retry-After)."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


def current_quota() -> Quota:
    return replace(Quota(), **getattr(settings, "SUBMISSION_QUOTAS", {}))


def charged(user):
    """The user's submissions that count against the quota (errored-by-infrastructure ones do not)."""
    return Submission.objects.filter(user=user, counts_against_quota=True)


def usage(user, now: datetime.datetime | None = None) -> dict[str, int]:
    """Counts the quota is checked against."""
    now = now or timezone.now()
    mine = charged(user)
    return {
        "per_day": mine.filter(created__gte=now - datetime.timedelta(days=1)).count(),
        "active": mine.filter(status__in=Submission.ACTIVE).count(),
        "per_minute": Submission.objects.filter(
            user=user, created__gte=now - datetime.timedelta(minutes=1)
        ).count(),
    }


def check_quota(user, new: int = 1) -> None:
    """Raise QuotaExceeded if `new` more submissions would take the user over any limit."""
    if user.is_staff:
        return
    quota, used = current_quota(), usage(user)
    if used["per_minute"] + new > quota.per_minute:
        raise QuotaExceeded(f"rate limit: at most {quota.per_minute} submissions a minute", retry_after=60)
    if used["active"] + new > quota.active:
        raise QuotaExceeded(
            f"at most {quota.active} submissions may be queued or running at once "
            f"({used['active']} are); wait for one to finish",
            retry_after=300,
        )
    if used["per_day"] + new > quota.per_day:
        raise QuotaExceeded(
            f"daily quota reached: {quota.per_day} submissions in 24 hours ({used['per_day']} used)",
            retry_after=3600,
        )
