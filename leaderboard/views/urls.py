"""URLs of the leaderboard pages, JSON API and CSV export (stable: others link to them)."""

from django.urls import path

from leaderboard.views import pages

app_name = "leaderboard"

urlpatterns = [
    path("", pages.home, name="home"),
    path("levels/<int:number>/", pages.level, name="level"),
    path("methods/<slug:slug>/", pages.method, name="method"),
    path("entries/<int:pk>/", pages.entry, name="entry"),
    path("tasks/<slug:suite>/<int:level>/<int:problem_id>/", pages.task, name="task"),
]
