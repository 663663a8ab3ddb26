"""The token-authenticated JSON API: POST /api/submissions, GET /api/submissions/<id>, cancel."""

import logging
from dataclasses import replace

from django.http import JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from leaderboard.models import EvaluationRun, Submission
from leaderboard.submissions.archives import Limits
from leaderboard.submissions.bundles import BundleError
from leaderboard.submissions.forms import named_entry_details
from leaderboard.submissions.intake import submit_bundle
from leaderboard.submissions.lifecycle import cancel
from leaderboard.submissions.public import public_text
from leaderboard.submissions.queue_health import no_worker_warning
from leaderboard.submissions.quotas import QuotaExceeded, check_rate, count_refusal
from leaderboard.submissions.routing import SubmissionRefused
from leaderboard.submissions.states import InvalidTransition
from leaderboard.submissions.tokens import authenticate, authenticate_token, bearer_token
from leaderboard.submissions.uploads import too_large

logger = logging.getLogger(__name__)


def error(message: str, status: int, **extra) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def token_user(request):
    """The user of the request's bearer token, or None. Sessions are never accepted here (no CSRF)."""
    return authenticate(bearer_token(request))


def with_token_team(details, token):
    """A team's token submits under its team: the team field may name it, never another."""
    if token.team is None:
        return details
    if details.team is not None and details.team != token.team:
        raise SubmissionRefused(f"this token is the team {token.team.name!r}'s: it submits under it only")
    return replace(details, team=token.team)


def is_final(submission: Submission) -> bool:
    run = submission.current_run
    errored_for_good = submission.status == Submission.Status.ERRORED and (
        run is None or run.status == EvaluationRun.Status.ERRORED
    )
    return submission.is_terminal or errored_for_good


def submission_json(request, submission: Submission) -> dict:
    entry = submission.entry
    return {
        "id": submission.pk,
        "status": submission.status,
        "done": submission.done,
        "total": submission.total,
        "reason": public_text(submission.reason),
        "entry": {
            "id": entry.pk,
            "url": request.build_absolute_uri(entry.get_absolute_url()),
            "method": entry.method.name,
            "level": entry.level.number,
        },  # fmt: skip
        "final": is_final(submission),
        "url": request.build_absolute_uri(submission.get_absolute_url()),
        "team": submission.team.slug if submission.team_id else None,
        "public": submission.public_kernels,
    }


def refused(user, message: str, status: int, **extra) -> JsonResponse:
    """An upload refused: the answer, and the refusal counted against the user's rate limit."""
    count_refusal(user)
    return error(message, status, **extra)


def over_quota(over: QuotaExceeded) -> JsonResponse:
    response = error(str(over), 429)
    response["Retry-After"] = str(over.retry_after)
    return response


@csrf_exempt
def submissions(request):
    """POST a bundle (multipart field 'bundle' plus the entry's fields).

    In this order: 401 without a token; 413 for an oversized body; 400 for missing or bad fields; 429 over
    the rate limit (before the bundle is read); 400 for a bad bundle; 429 over the other quotas. Every
    400 and 413 counts against the rate limit.
    """
    if request.method != "POST":
        return error("use POST", 405)
    token = authenticate_token(bearer_token(request))
    if token is None:
        return error("a valid API token is required (Authorization: Bearer …)", 401)
    user = token.user
    upload = request.FILES.get("bundle")
    limit = Limits().max_upload_bytes
    oversized = too_large(request)
    if oversized or (upload is not None and upload.size > limit):
        size = oversized or upload.size
        return refused(user, f"the upload is at least {size} bytes; at most {limit} are allowed", 413)
    if upload is None:
        return refused(user, "the multipart field 'bundle' (the bundle file) is required", 400)
    try:
        details = with_token_team(named_entry_details(request.POST), token)
        check_rate(user)
        created = submit_bundle(user, upload.read(), upload.name, details)
    except QuotaExceeded as over:
        return over_quota(over)
    except BundleError as rejected:
        return refused(user, rejected.message, 400, problems=rejected.problems)
    except SubmissionRefused as refusal:
        return refused(user, str(refusal), 400)
    items = [
        {"id": s.pk, "level": s.entry.level.number, "status": s.status, "team": s.team and s.team.slug,
         "public": s.public_kernels, "status_url": f"/api/submissions/{s.pk}",
         "url": request.build_absolute_uri(s.get_absolute_url())}
        for s in created
    ]  # fmt: skip
    first = items[0]
    return JsonResponse(
        {
            "id": first["id"],
            "status": first["status"],
            "status_url": first["status_url"],
            "submissions": items,
            "warning": no_worker_warning(created[0].hardware),
        },
        status=201,
    )


@require_GET
def submission(request, pk):
    """The status of one submission; public, like its page."""
    related = ("entry__method", "entry__level", "team")
    found = get_object_or_404(Submission.objects.select_related(*related), pk=pk)
    return JsonResponse(submission_json(request, found))


@csrf_exempt
@require_POST
def cancel_submission(request, pk):
    user = token_user(request)
    if user is None:
        return error("a valid API token is required", 401)
    found = get_object_or_404(Submission, pk=pk)
    if found.user_id != user.pk and not user.is_staff:
        return error("not your submission", 403)
    try:
        found = cancel(found, f"cancelled by {user.get_username()}")
    except InvalidTransition:
        return error(f"submission is {found.status}; it cannot be cancelled", 409)
    return JsonResponse(submission_json(request, found))
