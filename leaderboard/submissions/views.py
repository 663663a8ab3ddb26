"""Submission pages (placeholder bodies until the submissions work lands)."""

from django.shortcuts import get_object_or_404, render

from leaderboard.models import EvaluationRun, Submission


def detail(request, pk):
    return render(request, "leaderboard/home.html", {"object": get_object_or_404(Submission, pk=pk)})


def run(request, pk):
    return render(request, "leaderboard/home.html", {"object": get_object_or_404(EvaluationRun, pk=pk)})
