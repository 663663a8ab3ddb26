"""Admin for submissions, evaluation runs, per-task results and API tokens."""

from django.contrib import admin

from leaderboard.models import ApiToken, EvaluationRun, KernelSource, Submission, SubmissionKernel, TaskResult


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ["id", "user", "entry", "hardware", "status", "done", "total", "created"]
    list_filter = ["status", "hardware", "bundle_format"]
    search_fields = ["entry__method__name", "user__username", "bundle_sha256", "reason"]
    raw_id_fields = ["entry", "user"]


@admin.register(EvaluationRun)
class EvaluationRunAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "submission",
        "harness_version",
        "hardware",
        "device",
        "status",
        "started",
        "finished",
    ]
    list_filter = ["status", "device", "hardware", "harness_version"]
    search_fields = ["submission__entry__method__name", "rq_job_id", "reason"]
    raw_id_fields = ["submission"]


@admin.register(TaskResult)
class TaskResultAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "run",
        "task",
        "compiled",
        "correct",
        "error_kind",
        "speedup_eager",
        "speedup_compile",
    ]
    list_filter = ["compiled", "correct", "error_kind", "degenerate"]
    search_fields = ["task__name", "error_message"]
    raw_id_fields = ["run", "kernel", "task"]


@admin.register(SubmissionKernel)
class SubmissionKernelAdmin(admin.ModelAdmin):
    list_display = ["file_name", "submission", "task", "sample"]
    search_fields = ["file_name"]
    raw_id_fields = ["submission", "task", "source"]


@admin.register(KernelSource)
class KernelSourceAdmin(admin.ModelAdmin):
    list_display = ["sha256", "size"]
    search_fields = ["sha256"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "user", "name", "created", "last_used", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["prefix", "user__username", "name"]
    readonly_fields = ["token_hash", "prefix"]
