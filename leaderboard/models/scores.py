"""Scores: entry × metric → value, each with its provenance (reported or verified) and curation state."""

from django.core.exceptions import ValidationError
from django.db import models
from simple_history.models import HistoricalRecords

from leaderboard import scoring
from leaderboard.models.catalogue import Baseline, Entry
from leaderboard.models.curation import CurationState, Lane, Provenance
from leaderboard.models.metrics import Aggregation, Denominator, Metric, ThresholdOp


class Source(models.Model):
    """Where a reported number was published: a paper, a leaderboard page, a launch post."""

    class Kind(models.TextChoices):
        PAPER = "paper", "Paper"
        LEADERBOARD = "leaderboard", "Leaderboard / almanac page"
        LAUNCH_POST = "launch_post", "Launch post"
        OTHER = "other", "Other"

    title = models.CharField(max_length=300)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.PAPER)
    arxiv_id = models.CharField(max_length=20, blank=True)
    url = models.URLField(blank=True)
    published = models.DateField(null=True, blank=True)
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["title"]
        constraints = [models.UniqueConstraint(fields=["title", "kind"], name="unique_source_title")]

    def __str__(self):
        return self.title

    @property
    def link(self) -> str:
        return self.url or (f"https://arxiv.org/abs/{self.arxiv_id}" if self.arxiv_id else "")


class ScoreQuerySet(models.QuerySet):
    """Which scores a page shows or ranks; the rules themselves are leaderboard.scoring's."""

    def shown(self):
        """Scores a page may show: every one but the hidden (a hacked score shows as marked, unranked)."""
        return self.exclude(state=CurationState.HIDDEN)

    def rankable(self):
        """Scores whose curation state lets them rank."""
        return self.filter(state__in=scoring.RANKABLE_STATES)

    def verified(self):
        return self.filter(provenance=Provenance.VERIFIED)

    def reported(self):
        return self.filter(provenance=Provenance.REPORTED)

    def shown_verified(self):
        """The verified scores a leaderboard row shows by default: rankable, against PyTorch eager."""
        return self.verified().rankable().filter(baseline=Baseline.EAGER)


class Score(models.Model):
    """One value of one metric for one entry, with the conventions it was computed under."""

    entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="scores")
    metric = models.ForeignKey(Metric, on_delete=models.PROTECT, related_name="scores")
    value = models.FloatField()
    provenance = models.CharField(max_length=10, choices=Provenance.choices)

    # Reported: where it was published and how it was written.
    source = models.ForeignKey(Source, on_delete=models.PROTECT, null=True, blank=True, related_name="scores")
    source_table = models.CharField(max_length=200, blank=True, help_text="Table or figure, e.g. 'Table 1'.")
    as_written = models.CharField(max_length=500, blank=True, help_text="The value as the source writes it.")

    # Verified: the evaluation run that produced it.
    run = models.ForeignKey(
        "leaderboard.EvaluationRun", on_delete=models.PROTECT, null=True, blank=True, related_name="scores"
    )
    harness_version = models.CharField(max_length=40, blank=True)
    ci_low = models.FloatField(null=True, blank=True, help_text="Bootstrap 95% interval (verified geomeans).")
    ci_high = models.FloatField(null=True, blank=True)

    # Conventions this value was computed under (they vary between sources).
    aggregation = models.CharField(max_length=16, choices=Aggregation.choices, default=Aggregation.UNSTATED)
    threshold_op = models.CharField(max_length=2, choices=ThresholdOp.choices, blank=True, default="")
    denominator = models.CharField(max_length=16, choices=Denominator.choices, default=Denominator.UNSTATED)
    baseline = models.CharField(max_length=16, choices=Baseline.choices, default=Baseline.EAGER)
    n_tasks = models.PositiveIntegerField(null=True, blank=True)
    suite = models.CharField(
        max_length=40, blank=True, help_text="Task suite a verified score is over; blank for reported ones."
    )
    lane = models.CharField(max_length=10, choices=Lane.choices, default=Lane.RANKING)
    notes = models.TextField(blank=True)

    # Curation.
    state = models.CharField(max_length=10, choices=CurationState.choices, default=CurationState.VISIBLE)
    state_reason = models.TextField(blank=True)

    created = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords()

    objects = ScoreQuerySet.as_manager()

    class Meta:
        ordering = ["entry", "metric__position"]
        indexes = [models.Index(fields=["metric", "state"])]
        constraints = [
            models.UniqueConstraint(
                fields=["entry", "metric", "source"],
                condition=models.Q(provenance="reported"),
                name="one_reported_score_per_source",
            ),
            models.UniqueConstraint(
                fields=["entry", "metric", "run", "baseline"],
                condition=models.Q(provenance="verified"),
                name="one_verified_score_per_run",
            ),
            models.CheckConstraint(
                condition=models.Q(provenance="reported", run__isnull=True)
                | models.Q(provenance="verified", run__isnull=False),
                name="verified_scores_have_a_run",
            ),
        ]

    def __str__(self):
        return f"{self.entry} {self.metric_id}={self.value:g} ({self.provenance})"

    def clean(self):
        if self.state == CurationState.HACKED and not self.state_reason.strip():
            raise ValidationError({"state_reason": "Marking a score as hacked needs a reason."})
        if self.provenance == Provenance.REPORTED and self.source_id is None:
            raise ValidationError({"source": "A reported score needs its source."})

    @property
    def is_verified(self) -> bool:
        return self.provenance == Provenance.VERIFIED


class Pairing(models.Model):
    """A verified entry matched to the reported entry of the same method and level, so that its row shows
    both values and the gap. Automatic pairings are redone by `leaderboard.pairing`; a manual one (staff's
    choice in the admin, an empty reported entry meaning 'unpaired') is never overwritten."""

    class Mode(models.TextChoices):
        AUTO = "auto", "Automatic"
        MANUAL = "manual", "Manual (never re-paired automatically)"

    verified = models.OneToOneField(Entry, on_delete=models.CASCADE, related_name="pairing")
    reported = models.ForeignKey(
        Entry, on_delete=models.SET_NULL, null=True, blank=True, related_name="paired_verified"
    )
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.AUTO)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["verified"]

    def __str__(self):
        target = self.reported if self.reported_id else "nothing"
        return f"{self.verified} ↔ {target} ({self.mode})"

    def clean(self):
        if self.reported_id is None:
            return
        if self.reported_id == self.verified_id:
            raise ValidationError({"reported": "An entry cannot be paired with itself."})
        if self.reported.level_id != self.verified.level_id:
            raise ValidationError({"reported": "The reported entry must be on the same level."})


class ReportedTaskResult(models.Model):
    """One task of a reported run imported from KernelBench's eval_results.json: its verdict and timings
    as the source measured them (not by this site), so fast_p at any p is computed like a verified run's."""

    entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="reported_results")
    source = models.ForeignKey(Source, on_delete=models.PROTECT, related_name="task_results")
    problem_id = models.PositiveIntegerField()
    sample_id = models.PositiveIntegerField(default=0)
    compiled = models.BooleanField(default=False)
    correct = models.BooleanField(default=False)
    runtime_ms = models.FloatField(null=True, blank=True)
    ref_runtime_ms = models.FloatField(null=True, blank=True)
    speedup = models.FloatField(null=True, blank=True, help_text="ref_runtime / runtime when both are known.")
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["entry", "problem_id", "sample_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["entry", "problem_id", "sample_id"], name="one_reported_result_per_sample"
            )
        ]

    def __str__(self):
        return f"{self.entry} problem {self.problem_id} sample {self.sample_id} (reported)"
