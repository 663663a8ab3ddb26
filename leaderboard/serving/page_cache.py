"""Whole answers of the public read pages, kept per process under the data version for anonymous visitors.

The tables are already cached (leaderboard/table/cache.py), but rendering the template around a cached L2
table still costs about two thirds of a page's CPU (docs/performance.md, "Serving"). This middleware keeps
the finished bytes of the pages named in `CACHED_VIEWS`, keyed by path, query string and the data version
read *before* the view runs, so an answer stored under version v was built from data at least as new as v,
and the first change to shown data (which bumps the version in its own transaction) makes every stored
answer unreachable. Only anonymous requests are served from it: no cookie but the CSRF one, no
Authorization header; only plain 200 answers that set no cookie and used no CSRF token are stored. It sits
just inside the request limits, the rate limit, Django's security middleware and the static files (which
never reach it), so a hit skips sessions, authentication and the view; the headers the middlewares inside
it added (security policies, Vary) are stored with the answer and replayed. A gzip copy is made once, when
an answer is stored, and replayed to clients that accept it (JSON and HTML shrink ~10×, so a large answer
leaves the server's threads sooner; no page served from here holds a secret, so compression leaks none).
"""

import logging
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from django.conf import settings
from django.http import HttpResponse
from django.urls import Resolver404, resolve
from django.utils.cache import patch_vary_headers
from django.utils.text import compress_string

from leaderboard.models import DataVersion

logger = logging.getLogger(__name__)

CACHED_VIEWS = frozenset(
    {
        "leaderboard:home",
        "leaderboard:level",
        "leaderboard:level-csv",
        "leaderboard:api-levels",
        "leaderboard:api-leaderboard",
        "leaderboard:tasks",
    }
)
"""URL names whose answers depend only on the request's path and query and on shown data (method and
entry pages are left out: they also show submissions, which do not bump the data version)."""

UNKEPT_HEADERS = frozenset({"content-length", "content-encoding", "date", "set-cookie", "x-page-cache"})
"""Headers of an answer not replayed with it; every other one (type, disposition, the security policies
the middlewares inside this one added, Vary) is."""


COMPRESS_FROM_BYTES = 1024
GZIP_NAMED = re.compile(r"\b(?:gzip|\*)")
GZIP_REFUSED = re.compile(r"(?:^|,)\s*(?:gzip|\*)\s*;\s*q\s*=\s*0(?:\.0*)?\s*(?:,|$)", re.IGNORECASE)


@dataclass(frozen=True)
class StoredAnswer:
    content: bytes
    headers: tuple[tuple[str, str], ...]
    stored_at: float
    gzipped: bytes | None = None

    @property
    def size(self) -> int:
        return len(self.content) + len(self.gzipped or b"")


def compressed(content: bytes) -> bytes | None:
    """content gzipped (Django's: no timestamp, so equal answers give equal bytes), or None where that saves
    nothing."""
    if len(content) < COMPRESS_FROM_BYTES:
        return None
    packed = compress_string(content)
    return packed if len(packed) < len(content) else None


def accepts_gzip(request) -> bool:
    """True when the Accept-Encoding header names gzip (or *) and does not refuse it with q=0."""
    accepted = request.META.get("HTTP_ACCEPT_ENCODING", "")
    return GZIP_NAMED.search(accepted) is not None and GZIP_REFUSED.search(accepted) is None


class AnswerStore:
    """A least-recently-used map of answers bounded by their total bytes.

    An answer past its age is rebuilt by one request at a time: while that request builds it, the others
    asking for the same key get the old answer (of the same data version) instead of all building at once.
    """

    def __init__(self, max_bytes: int, max_age: float):
        self.max_bytes = max_bytes
        self.max_age = max_age
        self.answers: OrderedDict[tuple, StoredAnswer] = OrderedDict()
        self.refreshing: set[tuple] = set()
        self.size = 0
        self.lock = threading.Lock()

    def get(self, key: tuple) -> StoredAnswer | None:
        """The answer to replay, or None when the caller is to build it (then `release` the key)."""
        with self.lock:
            answer = self.answers.get(key)
            if answer is None:
                return None
            age = time.monotonic() - answer.stored_at
            if age > self.max_age and (key not in self.refreshing or age > 2 * self.max_age):
                self.refreshing.add(key)
                return None
            self.answers.move_to_end(key)
            return answer

    def release(self, key: tuple) -> None:
        """The caller that was to build key's answer is done, stored or not."""
        with self.lock:
            self.refreshing.discard(key)

    def put(self, key: tuple, answer: StoredAnswer) -> None:
        if answer.size > self.max_bytes // 4:
            return
        with self.lock:
            if key in self.answers:
                self._drop(key)
            self.answers[key] = answer
            self.size += answer.size
            while self.size > self.max_bytes:
                self._drop(next(iter(self.answers)))

    def clear(self) -> None:
        with self.lock:
            self.answers.clear()
            self.refreshing.clear()
            self.size = 0

    def _drop(self, key: tuple) -> None:
        self.size -= self.answers.pop(key).size


store = AnswerStore(max_bytes=settings.PAGE_CACHE_BYTES, max_age=settings.PAGE_CACHE_SECONDS)


def anonymous(request) -> bool:
    """True for a request that carries nothing of a visitor: no session, no token, no other cookie."""
    if "HTTP_AUTHORIZATION" in request.META:
        return False
    return set(request.COOKIES) <= {settings.CSRF_COOKIE_NAME}


def cached_view(path: str) -> bool:
    try:
        match = resolve(path)
    except Resolver404:
        return False
    return match.view_name in CACHED_VIEWS


def data_version() -> int | None:
    return DataVersion.objects.filter(pk=1).values_list("value", flat=True).first()


def storable(request, response) -> bool:
    """A plain, complete 200 answer that gives this visitor nothing of their own."""
    return (
        response.status_code == 200
        and not response.streaming
        and not response.has_header("Content-Encoding")
        and not response.cookies
        and not request.META.get("CSRF_COOKIE_NEEDS_UPDATE")
    )


def replay(answer: StoredAnswer, head: bool, gzip_ok: bool) -> HttpResponse:
    content = answer.gzipped if gzip_ok and answer.gzipped is not None else answer.content
    response = HttpResponse(b"" if head else content)
    for name, value in answer.headers:
        response[name] = value
    if content is answer.gzipped:
        response["Content-Encoding"] = "gzip"
    response["Content-Length"] = str(len(content))
    response["X-Page-Cache"] = "hit"
    return response


class PageCacheMiddleware:
    """Answers anonymous GET/HEAD requests for the cached views from the store when it can."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not (settings.PAGE_CACHE_ENABLED and request.method in ("GET", "HEAD") and anonymous(request)):
            return self.get_response(request)
        if not cached_view(request.path_info):
            return self.get_response(request)
        key = (request.path_info, request.META.get("QUERY_STRING", ""), data_version())
        answer = store.get(key)
        if answer is not None:
            return replay(answer, request.method == "HEAD", accepts_gzip(request))
        try:
            response = self.get_response(request)
            if request.method == "GET" and storable(request, response):
                keep(key, response)
        finally:
            store.release(key)
        return response


def keep(key: tuple, response) -> None:
    patch_vary_headers(response, ("Accept-Encoding",))  # hits may be gzipped: shared caches must know
    headers = tuple((name, value) for name, value in response.items() if name.lower() not in UNKEPT_HEADERS)
    content = response.content
    store.put(key, StoredAnswer(content, headers, time.monotonic(), compressed(content)))
