"""A read-API rate limit per client address: GETs (and HEADs) of /api/* past API_READ_RATE_LIMIT in a
window of API_READ_RATE_WINDOW_S seconds are answered 429 with a `Retry-After` header.

Counts live in a Django cache (API_READ_RATE_CACHE, the default cache unless set), one counter per address
and fixed window, bumped by the cache's atomic increment. With the default local-memory cache each web
process counts on its own; a shared cache (Redis, Memcached, the database) makes the limit site-wide. A
cache that fails lets the request through: the limit protects the site and must not take it down.

The client's address is REMOTE_ADDR, except for a request from a trusted proxy (API_READ_RATE_PROXIES,
by default FORWARDED_ALLOW_IPS's addresses, gunicorn's: the loopback), whose last X-Forwarded-For hop is
the client. A request from a trusted address without that header is the host's own (a health check, a
benchmark, a local script) and is not limited.
"""

import logging
import time

from django.conf import settings
from django.core.cache import caches

from leaderboard.serving.limits import refusal

logger = logging.getLogger(__name__)

READ_METHODS = frozenset({"GET", "HEAD"})


def limits() -> tuple[int, int]:
    """(requests allowed per window, window in seconds); 0 requests: no limit."""
    return settings.API_READ_RATE_LIMIT, max(1, settings.API_READ_RATE_WINDOW_S)


def counted(request) -> bool:
    return request.method in READ_METHODS and request.path_info.startswith("/api/")


def client_address(request) -> str | None:
    """The address the request counts against; None for the host's own requests (not limited)."""
    remote = request.META.get("REMOTE_ADDR", "")
    if remote not in settings.API_READ_RATE_PROXIES:
        return remote
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    last_hop = forwarded.rsplit(",", 1)[-1].strip()
    return last_hop or None


def hit(address: str, window_s: int, now: float) -> tuple[int, int]:
    """Count one request of the address in the current window: (its count, seconds the window has left)."""
    window = int(now // window_s)
    key = f"api-read-rate:{address}:{window}"
    cache = caches[settings.API_READ_RATE_CACHE]
    cache.add(key, 0, timeout=window_s + 1)
    try:
        count = cache.incr(key)
    except ValueError:  # the counter expired between add and incr: this request opens it again
        cache.add(key, 1, timeout=window_s + 1)
        count = 1
    return count, max(1, int((window + 1) * window_s - now + 0.999))


class ReadApiRateLimitMiddleware:
    """429 with Retry-After for an address past its read-API requests of the window."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        allowed, window_s = limits()
        address = client_address(request) if allowed > 0 and counted(request) else None
        if address is not None:
            try:
                count, left = hit(address, window_s, time.time())
            except Exception:  # a failing cache must not stop the site
                logger.exception("the read-API rate limit could not count a request")
                count, left = 0, 0
            if count > allowed:
                response = refusal(
                    429, f"Too many API requests: at most {allowed} every {window_s} s per address.",
                    request.path_info,
                )  # fmt: skip
                response["Retry-After"] = str(left)
                return response
        return self.get_response(request)
