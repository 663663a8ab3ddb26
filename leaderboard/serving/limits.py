"""Request limits applied before any view (or any other middleware) reads the request.

A body larger than the form-field allowance is answered 413 unread, on every path but the two bundle
uploads: those answer 413 in their own words (the upload form's page, the API's JSON), their upload handler
(submissions/uploads.py) refusing a body over the bundle limit unread in the same way. A body without a
declared length (chunked) is refused with 411, since Django would not read it anyway. A query string with
control characters (NUL and the like) is answered 400, whatever the URL.
"""

import functools
import re

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.urls import reverse

from leaderboard.submissions.uploads import FORM_FIELDS_ALLOWANCE

CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
"""Characters no query parameter of the site takes (tab, newline and carriage return are left to views)."""
PERCENT_CONTROL = re.compile(r"%(?:[01][0-9a-f]|7f)", re.IGNORECASE)
"""The same, percent-encoded (%00 …), as they appear in the raw query string."""
PERCENT_ALLOWED = {"%09", "%0a", "%0d"}


@functools.cache
def upload_paths() -> frozenset[str]:
    """The paths that accept a bundle."""
    return frozenset({reverse("submissions:upload"), reverse("submissions:api_submissions")})


def body_limit(path: str) -> int | None:
    """The most bytes a request body may have on this path; None for the uploads, which check their own."""
    if path in upload_paths():
        return None
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE + FORM_FIELDS_ALLOWANCE


def refusal(status: int, message: str, path: str) -> HttpResponse:
    """A short answer in the path's own kind: JSON for the API, a sentence in plain text elsewhere."""
    if path.startswith("/api/"):
        response = JsonResponse({"error": message}, status=status)
    else:
        response = HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")
    return response  # gunicorn closes a connection whose unread body is more than it drains (64 KiB)


def body_problem(meta, path: str) -> tuple[int, str] | None:
    """(status, sentence) for a request body that must not be read, or None."""
    if "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower():
        return 411, "A request body must state its length (Content-Length); chunked bodies are not accepted."
    declared = meta.get("CONTENT_LENGTH") or "0"
    if not declared.isascii() or not declared.isdigit():
        return 400, "The Content-Length header is not a number."
    limit = body_limit(path)
    if limit is not None and int(declared) > limit:
        return 413, f"The request body is {int(declared)} bytes; at most {limit} are accepted here."
    return None


def query_problem(raw_query: str) -> str | None:
    """A sentence about a query string that carries control characters, or None."""
    encoded = {match.lower() for match in PERCENT_CONTROL.findall(raw_query)} - PERCENT_ALLOWED
    if encoded or CONTROL.search(raw_query):
        return "The query string contains control characters (such as NUL), which no parameter accepts."
    return None


class RequestBodyLimitMiddleware:
    """Answers 411/413 for a body that is chunked or over its path's limit, before it is read."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        problem = body_problem(request.META, request.path_info)
        if problem:
            return refusal(*problem, request.path_info)
        return self.get_response(request)


class QueryStringMiddleware:
    """Answers 400 for a query string with control characters, on every URL."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        problem = query_problem(request.META.get("QUERY_STRING", ""))
        if problem:
            return refusal(400, problem, request.path_info)
        return self.get_response(request)
