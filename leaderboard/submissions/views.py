"""Submission pages: upload, my submissions and tokens, the live status page, runs, sources and logs."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from leaderboard.models import ApiToken, EvaluationRun, Submission, SubmissionKernel, TaskResult
from leaderboard.submissions import public_kernels, tokens
from leaderboard.submissions.api import is_final
from leaderboard.submissions.archives import Limits
from leaderboard.submissions.bundles import BundleError
from leaderboard.submissions.forms import UploadForm
from leaderboard.submissions.lifecycle import cancel
from leaderboard.submissions.queue_health import no_worker_warning, queue_health
from leaderboard.submissions.quotas import QuotaExceeded, check_rate, count_refusal, current_quota, usage
from leaderboard.submissions.routing import SubmissionRefused
from leaderboard.submissions.states import InvalidTransition
from leaderboard.submissions.uploads import too_large


def may_see_sources(user, submission: Submission) -> bool:
    """Kernel sources and logs are shown to their owner and to staff."""
    return user.is_authenticated and (user.is_staff or user.pk == submission.user_id)


def task_rows(run: EvaluationRun | None) -> list[dict]:
    """One row per kernel in the run's scope: its result, or None while pending."""
    if run is None:
        return []
    kernels = run.submission.kernels.select_related("task__level")
    if not run.all_samples:
        kernels = kernels.filter(sample=0)
    results = {r.kernel_id: r for r in TaskResult.objects.filter(run=run)}
    return [{"kernel": kernel, "result": results.get(kernel.pk)} for kernel in kernels]


def find_submission(pk):
    related = ("entry__method", "entry__level", "hardware", "user")
    return get_object_or_404(Submission.objects.select_related(*related), pk=pk)


@login_required
def upload(request):
    """The upload form. Refusals (413, 400) count against the rate limit; fields are checked (400) before
    the rate limit (429), which is checked before the bundle is read."""
    form = UploadForm(request.POST or None, request.FILES or None, user=request.user)
    status, over_limit = 200, ""
    if request.method == "POST" and too_large(request):
        form = UploadForm(user=request.user)
        over_limit = f"The upload is over {Limits().max_upload_bytes} bytes, the most a bundle may be."
        status = 413
    elif request.method == "POST" and form.is_valid():
        try:
            created = submit_from_form(request, form)
        except (BundleError, QuotaExceeded, SubmissionRefused) as refused:
            problems = refused.problems if isinstance(refused, BundleError) else [str(refused)]
            form.add_error("bundle", problems)
            status = 429 if isinstance(refused, QuotaExceeded) else 400
        else:
            warning = no_worker_warning(created[0].hardware)
            if warning:
                messages.warning(request, warning)
            if len(created) > 1:
                messages.info(request, f"The bundle spans {len(created)} levels: one submission each.")
                return redirect("submissions:mine")
            return redirect(created[0])
    elif request.method == "POST":
        status = 400
    if status in (400, 413):
        count_refusal(request.user)
    context = {
        "form": form,
        "quota": current_quota(),
        "usage": usage(request.user),
        "over_limit": over_limit,
        "queues": queue_health(),
    }
    return render(request, "submissions/upload.html", context, status=status)


def submit_from_form(request, form):
    from leaderboard.submissions.intake import submit_bundle

    check_rate(request.user)
    upload_file = form.cleaned_data["bundle"]
    return submit_bundle(request.user, upload_file.read(), upload_file.name, form.details())


def render_mine(request, new_token: str = "", account_page: bool = False):
    context = {
        "submissions": Submission.objects.filter(user=request.user).select_related(
            "entry__method", "entry__level"
        ),
        "tokens": ApiToken.objects.filter(user=request.user).select_related("team"),
        "teams": request.user.teams.all(),
        "quota": current_quota(),
        "usage": usage(request.user),
        "new_token": new_token,
        "account_page": account_page,
    }
    return render(request, "submissions/mine.html", context)


@login_required
def mine(request):
    return render_mine(request)


@login_required
@require_POST
def create_token(request):
    """Issue a token (a team's, when one of the user's teams is chosen) and show it once, on this response
    only."""
    team = None
    if request.POST.get("team"):
        team = request.user.teams.filter(slug=request.POST["team"]).first()
        if team is None:
            messages.error(request, "You are not a member of that team: no token was created.")
            return redirect("submissions:mine")
    _, clear = tokens.issue_token(request.user, name=request.POST.get("name", "")[:100], team=team)
    return render_mine(request, new_token=clear)


@login_required
@require_POST
def revoke_token(request, pk):
    tokens.revoke(ApiToken.objects.filter(pk=pk, user=request.user))
    messages.info(request, "Token revoked.")
    return redirect("submissions:mine")


def detail(request, pk):
    submission = find_submission(pk)
    run = submission.current_run
    context = {
        "submission": submission,
        "run": run,
        "rows": task_rows(run),
        "events": submission.events.all(),
        "runs": submission.runs.select_related("hardware"),
        "show_sources": may_see_sources(request.user, submission),
        "final": is_final(submission),
        "may_cancel": may_see_sources(request.user, submission) and not submission.is_terminal,
        "queue_warning": no_worker_warning(submission.hardware)
        if submission.status == Submission.Status.QUEUED
        else "",
    }
    return render(request, "submissions/detail.html", context)


def task_table(request, pk):
    """The per-task table of the current run alone, for the status page's live refresh."""
    submission = find_submission(pk)
    run = submission.current_run
    context = {"rows": task_rows(run), "run": run, "show_sources": may_see_sources(request.user, submission)}
    return render(request, "submissions/_task_rows.html", context)


def run(request, pk):
    found = get_object_or_404(EvaluationRun.objects.select_related("submission__entry", "hardware"), pk=pk)
    context = {
        "run": found,
        "submission": found.submission,
        "rows": task_rows(found),
        "show_sources": may_see_sources(request.user, found.submission),
    }
    return render(request, "submissions/run.html", context)


def kernel_source(request, pk):
    kernel = get_object_or_404(SubmissionKernel.objects.select_related("submission", "source", "task"), pk=pk)
    if not may_see_sources(request.user, kernel.submission):
        if public_kernels.is_public(kernel):  # its submitter made it public: its public page
            return redirect("submissions:public_kernel", kernel.pk)
        return HttpResponseForbidden("Kernel sources are shown to their owner and to staff.")
    if request.GET.get("raw"):
        return HttpResponse(kernel.source.text, content_type="text/plain; charset=utf-8")
    return render(request, "submissions/kernel.html", {"kernel": kernel})


def result_log(request, pk):
    result = get_object_or_404(TaskResult.objects.select_related("kernel__submission", "run", "task"), pk=pk)
    if not may_see_sources(request.user, result.kernel.submission):
        return HttpResponseForbidden("Logs are shown to the submission's owner and to staff.")
    return render(request, "submissions/log.html", {"result": result})


@login_required
@require_POST
def cancel_view(request, pk):
    submission = find_submission(pk)
    if not may_see_sources(request.user, submission):
        return HttpResponseForbidden("Only the owner or staff may cancel a submission.")
    try:
        cancel(submission, f"cancelled by {request.user.get_username()}")
    except InvalidTransition:
        messages.error(request, f"A {submission.status} submission cannot be cancelled.")
    return redirect(submission)
