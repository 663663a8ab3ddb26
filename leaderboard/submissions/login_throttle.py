"""Login throttling: after too many failed logins for one user name, or from one address, refuse logins
there for a while (the password guesser learns nothing more, however right its next guess is).

Counts live in Django's cache (per process with the default local-memory cache: set CACHES to a shared
backend to count across web processes).
"""

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_login_failed
from django.core.cache import cache
from django.dispatch import receiver

MAX_FAILURES = 10
WINDOW_S = 15 * 60


def limits() -> tuple[int, int]:
    """(failures allowed, window in seconds), from settings.LOGIN_THROTTLE if set."""
    custom = getattr(settings, "LOGIN_THROTTLE", {})
    return custom.get("failures", MAX_FAILURES), custom.get("window_s", WINDOW_S)


def counter_keys(username: str | None, request) -> list[str]:
    address = request.META.get("REMOTE_ADDR", "") if request is not None else ""
    return [f"login-failures:user:{(username or '').casefold()}", f"login-failures:address:{address}"]


def throttled(username: str | None, request) -> bool:
    allowed, _ = limits()
    return any((cache.get(key) or 0) >= allowed for key in counter_keys(username, request))


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


@receiver(user_login_failed, dispatch_uid="leaderboard-login-throttle")
def count_failure(sender, credentials, request=None, **kwargs):
    """Count a failed login against its user name and its address."""
    _, window = limits()
    for key in counter_keys(credentials.get("username"), request):
        cache.add(key, 0, window)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, window)
