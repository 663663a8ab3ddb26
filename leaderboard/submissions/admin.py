"""Admin for submissions (re-verify, cancel), runs, per-task results, API tokens and login throttles."""

from django.contrib import admin, messages

from leaderboard.models import (
    ApiToken,
    EvaluationRun,
    KernelSource,
    Submission,
    SubmissionKernel,
    TaskResult,
    WindowedCounter,
)
from leaderboard.submissions.lifecycle import cancel, reverify
from leaderboard.submissions.routing import SubmissionRefused
from leaderboard.submissions.states import InvalidTransition
from leaderboard.submissions.tokens import revoke


def reverify_each(request, queryset, all_samples: bool) -> None:
    queued, refused = 0, []
    for submission in queryset:
        try:
            reverify(submission, requested_by=request.user, all_samples=all_samples)
            queued += 1
        except SubmissionRefused as error:
            refused.append(str(error))
    if queued:
        messages.success(
            request, f"{queued} submission(s) queued for re-verification with the current harness."
        )
    for reason in refused:
        messages.warning(request, reason)


class EvaluationRunInline(admin.TabularInline):
    model = EvaluationRun
    fields = ("harness_version", "status", "device", "queue", "attempts", "created", "finished", "reason")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("pk", "entry", "user", "status", "done", "total", "hardware", "created")
    list_filter = ("status", "hardware", "suite", "bundle_format")
    search_fields = ("entry__method__name", "user__username", "bundle_name", "bundle_sha256", "reason")
    readonly_fields = [field.name for field in Submission._meta.fields]
    inlines = [EvaluationRunInline]
    actions = ["reverify_ranked", "reverify_all_samples", "cancel_selected"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Re-verify with the current harness (sample 0)")
    def reverify_ranked(self, request, queryset):
        reverify_each(request, queryset, all_samples=False)

    @admin.action(description="Re-verify with the current harness (every sample)")
    def reverify_all_samples(self, request, queryset):
        reverify_each(request, queryset, all_samples=True)

    @admin.action(description="Cancel the selected submissions")
    def cancel_selected(self, request, queryset):
        cancelled = 0
        for submission in queryset:
            try:
                cancel(submission, f"cancelled by {request.user.get_username()} (admin)")
                cancelled += 1
            except InvalidTransition:
                messages.warning(request, f"#{submission.pk} is {submission.status}: not cancelled")
        messages.info(request, f"{cancelled} submission(s) cancelled.")


@admin.register(EvaluationRun)
class EvaluationRunAdmin(admin.ModelAdmin):
    list_display = ("pk", "submission", "harness_version", "status", "device", "queue", "attempts", "created")
    list_filter = ("status", "harness_version", "device", "queue")
    search_fields = ("submission__entry__method__name", "rq_job_id", "reason")
    readonly_fields = [field.name for field in EvaluationRun._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(TaskResult)
class TaskResultAdmin(admin.ModelAdmin):
    list_display = ("id", "run", "task", "compiled", "correct", "error_kind", "speedup_eager")
    list_filter = ("compiled", "correct", "error_kind", "degenerate")
    search_fields = ("task__name", "error_message")
    raw_id_fields = ("run", "kernel", "task")


@admin.register(SubmissionKernel)
class SubmissionKernelAdmin(admin.ModelAdmin):
    list_display = ("file_name", "submission", "task", "sample")
    search_fields = ("file_name",)
    raw_id_fields = ("submission", "task", "source")


@admin.register(KernelSource)
class KernelSourceAdmin(admin.ModelAdmin):
    list_display = ("sha256", "size")
    search_fields = ("sha256",)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "user", "name", "created", "last_used", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("prefix", "user__username", "name")
    readonly_fields = ("user", "prefix", "token_hash", "created", "last_used", "revoked_at")
    actions = ["revoke_selected"]

    def has_add_permission(self, request):
        return (
            False  # tokens are issued by issue_token or the user's page, where the clear value is shown once
        )

    @admin.action(description="Revoke the selected tokens")
    def revoke_selected(self, request, queryset):
        messages.info(request, f"{revoke(queryset)} token(s) revoked.")


@admin.register(WindowedCounter)
class WindowedCounterAdmin(admin.ModelAdmin):
    """Who is being throttled; deleting a row lets that user name or address log in (or that user upload)
    again at once."""

    list_display = ("key", "count", "window_started")
    search_fields = ("key",)
    ordering = ("-window_started",)
    readonly_fields = ("key", "count", "window_started")

    def has_add_permission(self, request):
        return False
