"""Public kernels: what a submitter chose to publish, once a run of it is verified, per task and for download.

A kernel is public when its submission was uploaded with `public` and one of its runs completed with
verified scores that are not hidden. Any other kernel stays its owner's and staff's
(`views.may_see_sources`).
"""

import re

from django.db.models import Exists, OuterRef
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render

from leaderboard.models import EvaluationRun, Score, SubmissionKernel, TaskResult


def lines_of_code(text: str) -> int:
    """Lines that are neither blank nor only a comment."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def shown_runs():
    """Completed runs whose verified scores the public sees (not hidden): the feed's and the data
    download's runs."""
    shown = Score.objects.verified().shown().filter(run=OuterRef("pk"))
    return EvaluationRun.objects.filter(status=EvaluationRun.Status.COMPLETED).filter(Exists(shown))


def public_runs():
    """Shown runs of submissions whose submitter made the kernels public."""
    return shown_runs().filter(submission__public_kernels=True)


def is_public(kernel: SubmissionKernel) -> bool:
    return kernel.submission.public_kernels and public_runs().filter(submission=kernel.submission_id).exists()


def best_public_kernel(task) -> TaskResult | None:
    """The fastest correct sample-0 kernel against eager among public runs whose scores rank; never one
    the harness flagged as a hack."""
    ranking = Score.objects.shown_verified().filter(run=OuterRef("run"))
    results = (
        TaskResult.objects.filter(task=task, correct=True, kernel__sample=0, speedup_eager__isnull=False)
        .filter(run__in=public_runs(), kernel__submission__public_kernels=True)
        .filter(Exists(ranking))
        .select_related("run__hardware", "run__submission__entry__method", "kernel__source")
        .order_by("-speedup_eager", "pk")
    )
    for result in results[:20]:
        if not result.has_hack_flag:
            result.lines_of_code = lines_of_code(result.kernel.source.text)
            return result
    return None


def run_kernels(request, pk):
    """A public run's kernels, one row per task: verdict, speedups, lines of code, view and download."""
    run = get_object_or_404(
        public_runs().select_related("submission__entry__method", "submission__entry__level", "hardware"),
        pk=pk,
    )
    results = {r.kernel_id: r for r in TaskResult.objects.filter(run=run)}
    kernels = run.kernels_in_scope().select_related("task__level", "source")
    rows = [
        {"kernel": kernel, "result": results.get(kernel.pk), "lines": lines_of_code(kernel.source.text)}
        for kernel in kernels
    ]
    return render(request, "submissions/public_run_kernels.html", {"run": run, "rows": rows})


def kernel(request, pk):
    """A public kernel's source (`?raw=1`: the file itself, to download); 404 for a kernel not public."""
    found = get_object_or_404(
        SubmissionKernel.objects.select_related("submission__entry", "source", "task__level"), pk=pk
    )
    if not is_public(found):
        raise Http404("No public kernel of that id.")
    if request.GET.get("raw"):
        response = HttpResponse(found.source.text, content_type="text/plain; charset=utf-8")
        name = re.sub(r"[^\w.-]", "_", found.file_name.rsplit("/", 1)[-1]) or "kernel.py"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
    results = TaskResult.objects.filter(kernel=found, run__in=public_runs()).select_related("run__hardware")
    context = {"kernel": found, "lines": lines_of_code(found.source.text), "results": results}
    return render(request, "submissions/public_kernel.html", context)
