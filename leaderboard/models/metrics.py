"""The metric catalogue: what each score column means and the conventions a value needs to be read."""

from django.db import models

METRIC_COLUMNS = (
    "fast_1",
    "correct_rate",
    "speedup_mean",
    "speedup_geomean",
    "speedup_median",
    "speedup_min",
    "speedup_max",
    "pct_faster",
    "pct_slower",
    "success_rate",
    "fast_1_2",
    "fast_1_5",
    "fast_2",
)
"""The reported metric columns in the order leaderboard tables show them: the order of the Benchmark
Almanac's level tables, whose parser reads its 13 value columns by it (see docs/importing.md)."""


class Direction(models.TextChoices):
    HIGHER = "higher", "Higher is better"
    LOWER = "lower", "Lower is better"
    NEUTRAL = "neutral", "Neither"


class Aggregation(models.TextChoices):
    """How per-task values become one number."""

    RATE = "rate", "Rate (share of tasks or samples)"
    ARITHMETIC = "arithmetic", "Arithmetic mean (A)"
    GEOMETRIC = "geometric", "Geometric mean (G)"
    MEDIAN = "median", "Median"
    MIN = "min", "Minimum"
    MAX = "max", "Maximum"
    UNSTATED = "unstated", "Not stated"


class ThresholdOp(models.TextChoices):
    """Whether fast_p counts speedup > p (KernelBench) or speedup ≥ p (Dr. Kernel, daVinci)."""

    GT = ">", "strictly greater (>)"
    GE = ">=", "greater or equal (≥)"
    NONE = "", "no threshold"


class Denominator(models.TextChoices):
    ALL_TASKS = "all_tasks", "All tasks of the level or subset"
    CORRECT_ONLY = "correct_only", "Correct kernels only"
    ALL_SAMPLES = "all_samples", "All samples (several per task)"
    UNSTATED = "unstated", "Not stated"


class Metric(models.Model):
    """A column: fast_p, correct rate, speedup aggregates, % faster/slower, success rate."""

    id = models.SlugField(primary_key=True, max_length=40, help_text="Stable id used in URLs and the API.")
    name = models.CharField(max_length=80)
    short_name = models.CharField(max_length=30)
    description = models.TextField(blank=True)
    unit = models.CharField(max_length=20, help_text="'%', '×' or 'fraction'.")
    direction = models.CharField(max_length=10, choices=Direction.choices, default=Direction.HIGHER)
    aggregation = models.CharField(max_length=16, choices=Aggregation.choices)
    threshold_op = models.CharField(max_length=2, choices=ThresholdOp.choices, blank=True, default="")
    threshold = models.FloatField(null=True, blank=True, help_text="p for the fast_p family.")
    denominator = models.CharField(max_length=16, choices=Denominator.choices)
    position = models.PositiveSmallIntegerField(default=0, help_text="Column order in tables.")

    class Meta:
        ordering = ["position"]

    def __str__(self):
        return self.name

    @property
    def is_fast_p(self) -> bool:
        return self.threshold is not None
