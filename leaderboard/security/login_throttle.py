"""Login throttling: after too many failed logins for one user name, or from one address, refuse logins
there for a while (the password guesser learns nothing more, however right its next guess is).

Counts live in the database (`WindowedCounter`), one row per user name or address, each bumped by one
atomic upsert, so every web process on every host counts against the same limit.
"""

import datetime

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_login_failed
from django.db import connection
from django.dispatch import receiver
from django.utils import timezone

from leaderboard.models import WindowedCounter

MAX_FAILURES = 10
WINDOW_S = 15 * 60


def limits() -> tuple[int, int]:
    """(failures allowed, window in seconds), from settings.LOGIN_THROTTLE if set."""
    custom = getattr(settings, "LOGIN_THROTTLE", {})
    return custom.get("failures", MAX_FAILURES), custom.get("window_s", WINDOW_S)


def counter_keys(username: str | None, request) -> list[str]:
    address = request.META.get("REMOTE_ADDR", "") if request is not None else ""
    name = (username or "").casefold()[:150]
    return [f"user:{name}", f"address:{address}"]


def window_start() -> datetime.datetime:
    """The oldest failure that still counts."""
    return timezone.now() - datetime.timedelta(seconds=limits()[1])


def throttled(username: str | None, request) -> bool:
    allowed, _ = limits()
    return WindowedCounter.objects.filter(
        key__in=counter_keys(username, request), window_started__gt=window_start(), count__gte=allowed
    ).exists()


class ThrottledModelBackend(ModelBackend):
    """The model backend, refusing every attempt for a user name or address over its failure count."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if throttled(username or kwargs.get(self._username_field()), request):
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)

    @staticmethod
    def _username_field() -> str:
        from django.contrib.auth import get_user_model

        return get_user_model().USERNAME_FIELD


def upsert_sql() -> str:
    """One statement that counts a failure: a new window where the old one has passed (PostgreSQL and
    SQLite alike)."""
    quote = connection.ops.quote_name
    table, key, count, started = (
        quote(name) for name in (WindowedCounter._meta.db_table, "key", "count", "window_started")
    )
    current = f"{table}.{started} > %s"
    return (
        f"INSERT INTO {table} ({key}, {count}, {started}) VALUES (%s, 1, %s) "
        f"ON CONFLICT ({key}) DO UPDATE SET "
        f"{count} = CASE WHEN {current} THEN {table}.{count} + 1 ELSE 1 END, "
        f"{started} = CASE WHEN {current} THEN {table}.{started} ELSE %s END"
    )


@receiver(user_login_failed, dispatch_uid="leaderboard-login-throttle")
def count_failure(sender, credentials, request=None, **kwargs):
    """Count a failed login against its user name and its address; forget windows that have passed."""
    adapt = connection.ops.adapt_datetimefield_value
    now, oldest = adapt(timezone.now()), adapt(window_start())
    sql = upsert_sql()
    with connection.cursor() as cursor:
        for key in counter_keys(credentials.get("username"), request):
            cursor.execute(sql, [key, now, oldest, oldest, now])
    WindowedCounter.objects.filter(window_started__lte=window_start()).delete()
