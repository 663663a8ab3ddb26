"""URLs of submissions: upload, status pages and the token-authenticated API."""

from django.urls import path

from leaderboard.submissions import views

app_name = "submissions"

urlpatterns = [
    path("submissions/<int:pk>/", views.detail, name="detail"),
    path("runs/<int:pk>/", views.run, name="run"),
]
