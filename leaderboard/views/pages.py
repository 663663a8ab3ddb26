"""HTML pages (placeholder bodies until the leaderboard-views work lands)."""

from django.shortcuts import get_object_or_404, render

from leaderboard.models import Entry, Level, Method
from tasks.models import Task


def home(request):
    return render(request, "leaderboard/home.html", {"levels": Level.objects.all()})


def level(request, number):
    return render(request, "leaderboard/home.html", {"levels": [get_object_or_404(Level, number=number)]})


def method(request, slug):
    return render(request, "leaderboard/home.html", {"object": get_object_or_404(Method, slug=slug)})


def entry(request, pk):
    return render(request, "leaderboard/home.html", {"object": get_object_or_404(Entry, pk=pk)})


def task(request, suite, level, problem_id):
    found = get_object_or_404(Task, suite=suite, level__number=level, problem_id=problem_id, is_current=True)
    return render(request, "leaderboard/home.html", {"object": found})
