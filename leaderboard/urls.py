"""Root URLconf: the leaderboard pages and API, submissions, accounts, admin, the RQ dashboard, health."""

from django.contrib import admin
from django.urls import include, path

from leaderboard.serving.health import healthz
from leaderboard.views import accounts

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/rq/", include("django_rq.urls")),
    path("admin/", admin.site.urls),
    path("accounts/signup/", accounts.signup, name="signup"),
    path("account/", accounts.account, name="account"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("leaderboard.submissions.urls")),
    path("", include("leaderboard.views.urls")),
]
