"""URLs of submissions: upload, status pages, kernel sources and logs, and the token-authenticated API."""

from django.urls import path

from leaderboard.submissions import api, public_kernels, views

app_name = "submissions"

urlpatterns = [
    path("submit/", views.upload, name="upload"),
    path("submissions/", views.mine, name="mine"),
    path("submissions/tokens/", views.create_token, name="create_token"),
    path("submissions/tokens/<int:pk>/revoke/", views.revoke_token, name="revoke_token"),
    path("submissions/<int:pk>/", views.detail, name="detail"),
    path("submissions/<int:pk>/tasks/", views.task_table, name="task_table"),
    path("submissions/<int:pk>/cancel/", views.cancel_view, name="cancel"),
    path("runs/<int:pk>/", views.run, name="run"),
    path("kernels/<int:pk>/", views.kernel_source, name="kernel"),
    path("results/<int:pk>/log/", views.result_log, name="log"),
    path("api/submissions", api.submissions, name="api_submissions"),
    path("api/submissions/<int:pk>", api.submission, name="api_submission"),
    path("api/submissions/<int:pk>/cancel", api.cancel_submission, name="api_cancel"),
    path("runs/<int:pk>/kernels/", public_kernels.run_kernels, name="public_run_kernels"),
    path("public/kernels/<int:pk>/", public_kernels.kernel, name="public_kernel"),
]
