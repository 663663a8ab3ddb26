"""Evaluation runs of a submission (a harness version on a kind of hardware) and their per-task results."""

from django.conf import settings
from django.db import models
from django.urls import reverse

from leaderboard.models.catalogue import Hardware
from leaderboard.models.submissions import Submission, SubmissionKernel


class EvaluationRun(models.Model):
    """One evaluation of a submission by one harness version on one kind of hardware."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"
        ERRORED = "errored", "Errored"
        CANCELLED = "cancelled", "Cancelled"

    submission = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="runs")
    harness_version = models.CharField(max_length=40)
    mode = models.CharField(max_length=16, default="hardened", help_text="hardened or kernelbench.")
    device = models.CharField(max_length=8, default="cuda", help_text="cuda, or cpu for CPU-only runs.")
    hardware = models.ForeignKey(Hardware, on_delete=models.PROTECT, related_name="+")
    queue = models.CharField(max_length=40, blank=True, help_text="RQ queue the run was sent to.")
    all_samples = models.BooleanField(
        default=False, help_text="Evaluate every sample, not only sample 0 (which alone ranks)."
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    reason = models.TextField(blank=True)  # public, like the submission's reason: never a log
    harness_log = models.TextField(
        blank=True,
        help_text="The last failed attempt's harness errors and log tail; shown to the owner and staff only.",
    )
    environment = models.JSONField(default=dict, blank=True)
    rq_job_id = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=200, blank=True, help_text="RQ worker that last ran it.")
    attempts = models.PositiveSmallIntegerField(default=0)
    heartbeat = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self):
        return f"Run #{self.pk} of submission #{self.submission_id} ({self.harness_version}, {self.status})"

    def get_absolute_url(self):
        return reverse("submissions:run", args=[self.pk])

    @property
    def is_cpu_only(self) -> bool:
        return self.device == "cpu"

    def kernels_in_scope(self):
        """The submission's kernels this run evaluates (sample 0 only unless it evaluates all samples)."""
        return self.submission.kernels.in_scope(self.all_samples)


class TaskResult(models.Model):
    """The harness's verdict on one kernel in one run: compiled, correct, timings, speedups, flags."""

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="results")
    kernel = models.ForeignKey(SubmissionKernel, on_delete=models.PROTECT, related_name="results")
    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="results")
    compiled = models.BooleanField(default=False)
    correct = models.BooleanField(default=False)
    error_kind = models.CharField(max_length=40, blank=True)
    error_message = models.TextField(blank=True)
    runtime_ms = models.JSONField(null=True, blank=True, help_text="Kernel timing statistics and samples.")
    baseline_eager_ms = models.JSONField(null=True, blank=True)
    baseline_compile_ms = models.JSONField(null=True, blank=True)
    speedup_eager = models.FloatField(null=True, blank=True)
    speedup_compile = models.FloatField(null=True, blank=True)
    flags = models.JSONField(default=list, blank=True)
    degenerate = models.BooleanField(default=False, help_text="A null canary passed this task.")
    log = models.TextField(blank=True)
    raw = models.JSONField(default=dict, blank=True, help_text="The harness's full JSON result.")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task__level__number", "task__problem_id"]
        constraints = [models.UniqueConstraint(fields=["run", "kernel"], name="one_result_per_run_kernel")]

    def __str__(self):
        return f"{self.kernel} in run #{self.run_id}"

    @property
    def has_hack_flag(self) -> bool:
        return any(flag.get("severity") == "hack" for flag in self.flags)
