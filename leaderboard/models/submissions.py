"""Submissions of kernel bundles: their status history and their kernels, each source stored once."""

from django.conf import settings
from django.db import models
from django.urls import reverse

from leaderboard.models.catalogue import Entry, Hardware
from leaderboard.models.teams import Team


class Submission(models.Model):
    """A kernel bundle uploaded for one entry; its life is received → … → completed/failed/errored."""

    class Status(models.TextChoices):
        RECEIVED = "received", "Received"
        VALIDATED = "validated", "Validated"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"  # the submission's fault, with a reason
        ERRORED = "errored", "Errored"  # infrastructure, retried
        CANCELLED = "cancelled", "Cancelled"

    TERMINAL = frozenset({Status.COMPLETED, Status.FAILED, Status.CANCELLED})
    ACTIVE = frozenset({Status.RECEIVED, Status.VALIDATED, Status.QUEUED, Status.RUNNING, Status.ERRORED})

    class Format(models.TextChoices):
        RUNS_ARCHIVE = "runs_archive", "KernelBench runs/ folder (zip or tar.gz)"
        LEADERBOARD_JSON = "leaderboard_json", "KernelBench leaderboard JSON"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="submissions")
    entry = models.ForeignKey(Entry, on_delete=models.PROTECT, related_name="submissions")
    suite = models.CharField(max_length=40, default="builtin", help_text="Task suite the bundle targets.")
    hardware = models.ForeignKey(Hardware, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RECEIVED)
    reason = models.TextField(blank=True)
    bundle_format = models.CharField(max_length=20, choices=Format.choices)
    bundle_name = models.CharField(max_length=255, blank=True)
    bundle_sha256 = models.CharField(max_length=64)
    total = models.PositiveIntegerField(default=0, help_text="Kernels to evaluate in the current run.")
    done = models.PositiveIntegerField(default=0)
    counts_against_quota = models.BooleanField(default=True)
    bundle_metadata = models.JSONField(
        default=dict, blank=True, help_text="The bundle's own metadata and the files it skipped."
    )
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, null=True, blank=True, related_name="submissions",
        help_text="The team it was submitted under (its quota is the team's).",
    )  # fmt: skip
    public_kernels = models.BooleanField(
        default=False, help_text="Kernels public once a run of it is verified (the submitter chooses)."
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["status", "updated"]), models.Index(fields=["user", "created"])]

    def __str__(self):
        return f"Submission #{self.pk} ({self.status})"

    def get_absolute_url(self):
        return reverse("submissions:detail", args=[self.pk])

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL

    @property
    def current_run(self):
        """The newest evaluation run, or None before the first is queued."""
        return self.runs.order_by("-created", "-pk").first()


class SubmissionEvent(models.Model):
    """One change of a submission's status, with its reason: the page's history and the audit trail."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="events")
    status = models.CharField(max_length=12, choices=Submission.Status.choices)
    reason = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created", "pk"]

    def __str__(self):
        return f"#{self.submission_id} → {self.status}"


class KernelSource(models.Model):
    """A kernel file's text, stored once per content hash."""

    sha256 = models.CharField(max_length=64, unique=True)
    text = models.TextField()
    size = models.PositiveIntegerField()

    def __str__(self):
        return self.sha256[:12]


class SubmissionKernelQuerySet(models.QuerySet):
    def in_scope(self, all_samples: bool):
        """The kernels a run evaluates: sample 0 (the one that ranks), or every sample when asked."""
        return self if all_samples else self.filter(sample=0)


class SubmissionKernel(models.Model):
    """One kernel of a bundle: task × sample → source. Sample 0 ranks; others are kept."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="kernels")
    task = models.ForeignKey("tasks.Task", on_delete=models.PROTECT, related_name="+")
    sample = models.PositiveIntegerField(default=0)
    source = models.ForeignKey(KernelSource, on_delete=models.PROTECT, related_name="+")
    file_name = models.CharField(max_length=255)

    objects = SubmissionKernelQuerySet.as_manager()

    class Meta:
        ordering = ["task__level__number", "task__problem_id", "sample"]
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "task", "sample"], name="one_kernel_per_task_sample"
            )
        ]

    def __str__(self):
        return self.file_name
