"""A benchmark task as stored: one version of one KernelBench-format problem file."""

from django.db import models
from django.urls import reverse

from tasks import suites


class TaskQuerySet(models.QuerySet):
    def current(self, suite: str | None = None):
        """The current version of every problem, of one suite when given."""
        tasks = self.filter(is_current=True)
        return tasks if suite is None else tasks.filter(suite=suite)

    def level_count(self, suite: str, level_number: int) -> int:
        """Problems in one level of a suite: the denominator of its runs' rates (KernelBench's fast_p)."""
        return self.current(suite).filter(level__number=level_number).count()

    def level_counts(self, suite: str) -> dict[int, int]:
        """The number of current problems per level of a suite, by level number."""
        counts = self.current(suite).values_list("level__number").annotate(n=models.Count("pk"))
        return dict(counts.order_by("level__number"))

    def default_suite(self) -> str:
        """The suite new submissions target unless they name one: KernelBench once it is imported."""
        return suites.KERNELBENCH if self.current(suites.KERNELBENCH).exists() else suites.BUILTIN


class Task(models.Model):
    """A problem (class Model, get_inputs, get_init_inputs) of a suite, level and id, at one version."""

    suite = models.CharField(max_length=40, help_text="'builtin' (the project's own) or 'kernelbench'.")
    level = models.ForeignKey("leaderboard.Level", on_delete=models.PROTECT, related_name="tasks")
    problem_id = models.PositiveIntegerField()
    name = models.CharField(
        max_length=200, help_text="File name without .py, e.g. 12_Gemm_Multiply_LeakyReLU."
    )
    version = models.PositiveIntegerField(default=1)
    content_hash = models.CharField(
        max_length=64, help_text="KernelBench's hash: code without comments/space."
    )
    source = models.TextField()
    cpu_source = models.TextField(blank=True, help_text="A CPU-sized variant of the same problem, if any.")
    is_current = models.BooleanField(default=True)
    origin = models.CharField(max_length=500, blank=True, help_text="Path or URL it was imported from.")
    created = models.DateTimeField(auto_now_add=True)

    objects = TaskQuerySet.as_manager()

    class Meta:
        ordering = ["suite", "level__number", "problem_id", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["suite", "level", "problem_id", "version"], name="unique_task_version"
            ),
            models.UniqueConstraint(
                fields=["suite", "level", "problem_id"],
                condition=models.Q(is_current=True),
                name="one_current_version_per_task",
            ),
        ]

    def __str__(self):
        return f"L{self.level.number}/{self.name} v{self.version} ({self.suite})"

    def get_absolute_url(self):
        return reverse("leaderboard:task", args=[self.suite, self.level.number, self.problem_id])

    @property
    def key(self) -> str:
        """The id KernelBench bundles use: level_{L}_problem_{P}."""
        return f"level_{self.level.number}_problem_{self.problem_id}"
