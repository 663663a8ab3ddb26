"""URLs of the leaderboard pages, JSON API and CSV export (stable: others link to them)."""

from django.urls import path

from leaderboard.views import api, compare, data, export, feed, pages, reference

app_name = "leaderboard"

urlpatterns = [
    path("", pages.home, name="home"),
    path("levels/<int:number>/", pages.level, name="level"),
    path("levels/<int:number>/export.csv", export.level_csv, name="level-csv"),
    path("methods/", reference.method_index, name="methods"),
    path("glossary/", reference.glossary, name="glossary"),
    path("methods/<slug:slug>/", pages.method, name="method"),
    path("entries/<int:pk>/", pages.entry, name="entry"),
    path("tasks/", pages.task_index, name="tasks"),
    path("tasks/<slug:suite>/<int:level>/<int:problem_id>/", pages.task, name="task"),
    path("api/levels", api.levels, name="api-levels"),
    path("api/levels/<int:number>/leaderboard", api.leaderboard, name="api-leaderboard"),
    path("api/methods/<slug:slug>", api.method, name="api-method"),
    path("api/entries/<int:pk>", api.entry, name="api-entry"),
    path("compare/", compare.compare, name="compare"),
    path("api/entries/<int:pk>/eval_results.json", api.eval_results, name="api-eval-results"),
    path("feed.atom", feed.ChangeFeed(), name="feed"),
    path("changes/", feed.changes, name="changes"),
    path("api/data.json", data.data_json, name="api-data"),
]
