"""Root URLconf: the leaderboard pages and API, submissions, accounts, admin, the RQ dashboard, health."""

from django.contrib import admin
from django.urls import include, path

from leaderboard.serving.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/rq/", include("django_rq.urls")),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("leaderboard.submissions.urls")),
    path("", include("leaderboard.views.urls")),
]
