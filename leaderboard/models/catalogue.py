"""What is ranked: benchmarks and their levels, hardware, methods, and entries (a method on a level)."""

import datetime

from django.db import models
from django.urls import reverse
from django.utils.text import slugify
from simple_history.models import HistoricalRecords


class Benchmark(models.Model):
    """A benchmark suite, e.g. KernelBench."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    version = models.CharField(max_length=40, blank=True, help_text="Problem-set version, e.g. v0.1.")
    url = models.URLField(blank=True)

    def __str__(self):
        return self.name


class Level(models.Model):
    """One level of a benchmark (KernelBench L1/L2/L3) with its task count."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="levels")
    number = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=100)
    task_count = models.PositiveIntegerField(help_text="Tasks in the full level: the fast_p denominator.")
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["benchmark", "number"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "number"], name="unique_level_number")]

    def __str__(self):
        return f"{self.benchmark.name} L{self.number}"

    def get_absolute_url(self):
        return reverse("leaderboard:level", args=[self.number])


class Hardware(models.Model):
    """A GPU model as reported (L40S, H100, H200, A100, RTX 6000 …); CPU for CPU-only harness runs."""

    name = models.CharField(max_length=80, unique=True)
    vendor = models.CharField(max_length=40, blank=True)
    queue = models.CharField(
        max_length=40, blank=True, help_text="RQ queue that evaluates on this hardware, e.g. gpu-h200."
    )

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "hardware"

    def __str__(self):
        return self.name


class MethodKind(models.TextChoices):
    ZERO_SHOT_LLM = "llm", "Zero-shot LLM"
    TRAINED_MODEL = "trained", "Trained model"
    AGENT_SYSTEM = "agent", "Agent system"
    COMPILER = "compiler", "Compiler"
    BASELINE = "baseline", "Baseline"
    UNCLASSIFIED = "unclassified", "Not yet classified"


class MethodManager(models.Manager):
    """Methods are found by name in any case, and a new one gets a slug no other method has."""

    def named(self, name: str):
        """The method of that name (any case, surrounding space ignored), or None."""
        return self.filter(name__iexact=name.strip()).first()

    def get_or_create_by_name(self, name: str, **fields) -> tuple["Method", bool]:
        """(the method of that name, False), or (a new one with these fields and a unique slug, True)."""
        name = name.strip()
        existing = self.named(name)
        if existing is not None:
            return existing, False
        return self.create(name=name, slug=self.unique_slug(name), **fields), True

    def unique_slug(self, name: str) -> str:
        """The name's slug, with -2, -3 … appended while another method holds it."""
        base = slugify(name)[:120] or "method"
        slug, suffix = base, 2
        while self.filter(slug=slug).exists():
            slug, suffix = f"{base}-{suffix}", suffix + 1
        return slug


class Method(models.Model):
    """A way of producing kernels: an LLM, an RL-trained model, an agent system, a compiler, a baseline."""

    name = models.CharField(max_length=120, unique=True)
    slug = models.SlugField(max_length=140, unique=True)
    organisation = models.CharField(max_length=200, blank=True)
    kind = models.CharField(max_length=16, choices=MethodKind.choices, default=MethodKind.ZERO_SHOT_LLM)
    backbone = models.CharField(max_length=200, blank=True, help_text="Base model, e.g. Qwen3-14B-Base.")
    agent_models = models.CharField(max_length=300, blank=True, help_text="Models an agent system calls.")
    paper_url = models.URLField(blank=True)
    arxiv_id = models.CharField(max_length=20, blank=True)
    code_url = models.URLField(blank=True)
    model_url = models.URLField(blank=True)
    description = models.TextField(blank=True)
    history = HistoricalRecords()

    objects = MethodManager()

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("leaderboard:method", args=[self.slug])


class Baseline(models.TextChoices):
    """What a speedup is measured against."""

    EAGER = "eager", "PyTorch eager"
    COMPILE = "compile", "torch.compile"
    NAIVE_CUDA = "naive_cuda", "Naive CUDA"
    UNSTATED = "unstated", "Not stated"


class Entry(models.Model):
    """One configuration of a method on a level: hardware, protocol, data source, date, subset, baseline."""

    method = models.ForeignKey(Method, on_delete=models.PROTECT, related_name="entries")
    level = models.ForeignKey(Level, on_delete=models.PROTECT, related_name="entries")
    label = models.CharField(
        max_length=200,
        blank=True,
        help_text="The row's name as the source writes it, e.g. 'Dr. Kernel-14B*'.",
    )
    hardware = models.ForeignKey(Hardware, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    data_source = models.CharField(max_length=200, blank=True, help_text="e.g. 'Dr. Kernel paper'.")
    mode = models.CharField(max_length=120, blank=True, help_text="Protocol, e.g. zero-shot, multi-turn.")
    reproduce = models.BooleanField(default=False, help_text="A third party's reproduction of the method.")
    hyperparameters = models.JSONField(
        default=list, blank=True, help_text="A list of settings, e.g. ['10 generations', '8 proposals …']."
    )
    date = models.DateField(null=True, blank=True, help_text="Year and month (day is always 1).")
    task_subset = models.CharField(max_length=120, blank=True, help_text="e.g. 'Full L2', '40-task subset'.")
    n_tasks = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tasks scored; empty if not stated."
    )
    baseline = models.CharField(max_length=16, choices=Baseline.choices, default=Baseline.EAGER)
    notes = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True, help_text="Every key=value as the source wrote it.")
    import_key = models.CharField(
        max_length=600, unique=True, null=True, blank=True, help_text="Natural key of an imported row."
    )
    created = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["level", "method__name", "id"]
        verbose_name_plural = "entries"

    def __str__(self):
        return f"{self.display_name} (L{self.level.number})"

    def get_absolute_url(self):
        return reverse("leaderboard:entry", args=[self.pk])

    @property
    def display_name(self) -> str:
        return self.label or self.method.name

    @property
    def date_label(self) -> str:
        """The date as the almanac writes it: YYYY.MM."""
        return self.date.strftime("%Y.%m") if self.date else ""

    @staticmethod
    def parse_date_label(text: str) -> datetime.date:
        """Parse 'YYYY.MM' into the first day of that month."""
        year, month = text.split(".")
        return datetime.date(int(year), int(month), 1)
