"""What a table reads from the database: the level, the metric catalogue, entries, scores and outcomes."""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Exists, OuterRef, Q, Subquery
from django.urls import reverse

from leaderboard import scoring
from leaderboard.models import (
    Baseline,
    CurationState,
    DataVersion,
    Entry,
    Level,
    Metric,
    Pairing,
    Provenance,
    ReportedTaskResult,
    Score,
    TaskResult,
)
from leaderboard.table.query import TableQuery, View

LIGHT_FIELDS = (
    "id",
    "entry_id",
    "metric_id",
    "value",
    "provenance",
    "state",
    "baseline",
    "run_id",
    "n_tasks",
    "aggregation",
    "ci_low",
    "ci_high",
)
DETAIL_FIELDS = (
    "threshold_op",
    "denominator",
    "source_table",
    "as_written",
    "state_reason",
    "notes",
    "harness_version",
    "run__hardware__name",
    "run__device",
    "suite",
    "lane",
    "source_id",
    "source__title",
    "source__kind",
    "source__arxiv_id",
    "source__url",
)


@dataclass(slots=True)
class Candidate:
    """One stored score as a table reads it; the detail fields are read for the page's rows only."""

    id: int
    entry_id: int
    metric_id: str
    value: float
    provenance: str
    state: str
    baseline: str
    run_id: int | None
    n_tasks: int | None
    aggregation: str
    ci_low: float | None = None
    ci_high: float | None = None
    threshold_op: str = ""
    denominator: str = ""
    source_table: str = ""
    as_written: str = ""
    state_reason: str = ""
    notes: str = ""
    harness_version: str = ""
    run_hardware: str = ""
    run_device: str = ""
    suite: str = ""
    lane: str = ""
    source_id: int | None = None
    source_title: str = ""
    source_kind: str = ""
    source_arxiv_id: str = ""
    source_url: str = ""

    @property
    def rankable(self) -> bool:
        return scoring.is_rankable(self.state)

    @property
    def verified(self) -> bool:
        return self.provenance == Provenance.VERIFIED

    @property
    def interval(self) -> scoring.Interval | None:
        """Its 95 % interval (scoring.value_interval): verified values and imported per-task results."""
        per_task = self.verified or self.ci_low is not None
        stored = (self.ci_low, self.ci_high)
        return scoring.value_interval(self.metric_id, self.value, self.n_tasks, stored, per_task)

    @property
    def source_link(self) -> str:
        return self.source_url or (
            f"https://arxiv.org/abs/{self.source_arxiv_id}" if self.source_arxiv_id else ""
        )

    @property
    def run_url(self) -> str:
        return reverse("submissions:run", args=[self.run_id]) if self.run_id else ""


def table_scores(query: TableQuery):
    """The stored scores a table may show under the query's filters (hidden ones never; the lanes the
    query asks for, the ranking lane alone by default)."""
    scores = Score.objects.shown().filter(lane__in=query.lanes)
    if query.provenance:
        scores = scores.filter(provenance=query.provenance)
    if query.baseline:
        scores = scores.filter(baseline=query.baseline)
    else:
        scores = scores.filter(Q(provenance=Provenance.REPORTED) | Q(baseline=Baseline.EAGER))
    if query.hardware:
        scores = scores.filter(
            Q(provenance=Provenance.REPORTED, entry__hardware__name=query.hardware)
            | Q(provenance=Provenance.VERIFIED, run__hardware__name=query.hardware)
        )
    return scores


def fetch_level(number: int) -> Level:
    """The level, annotated with the current data version (one query for both)."""
    version = DataVersion.objects.filter(pk=1).values("value")[:1]
    level = (
        Level.objects.select_related("benchmark")
        .annotate(data_version=Subquery(version))
        .filter(number=number)
        .order_by("benchmark_id")
        .first()
    )
    if level is None:
        raise Level.DoesNotExist(f"There is no level {number}.")
    return level


def fetch_metrics(level: Level, query: TableQuery) -> dict[str, Metric]:
    """The metric catalogue, each with `present`: whether the level has a score for it under the filters."""
    present = table_scores(query).filter(metric=OuterRef("pk"), entry__level=level)
    return {metric.id: metric for metric in Metric.objects.annotate(present=Exists(present))}


ENTRY_FIELDS = (
    "id",
    "label",
    "date",
    "baseline",
    "n_tasks",
    "task_subset",
    "mode",
    "data_source",
    "reproduce",
    "hardware__name",
    "method__name",
    "method__slug",
    "method__kind",
    "method__backbone",
    "method__agent_models",
)
"""An entry's fields as a table row holds them, in the order of Row's first fields."""


ENTRY_ANNOTATIONS = ("verified_run", "in_view", "run_withheld", "paired_entry", "per_task_reported")
"""What fetch_entries adds to an entry's fields, in the order of Row's next fields."""


def fetch_entries(level: Level, query: TableQuery, view: View) -> list[tuple]:
    """The level's entries: their fields, whether each has scores in the view, its newest verified run,
    whether curation withholds that run's per-task results (see `withheld_state`) and the reported entry
    it is paired with (leaderboard.pairing) and whether it holds imported per-task results."""
    own = table_scores(query).filter(entry=OuterRef("pk"))
    newest = own.verified().rankable().order_by("-run_id")
    rows = (
        Entry.objects.filter(level=level)
        .annotate(
            verified_run=Subquery(newest.values("run_id")[:1]),
            in_view=Exists(own.filter(metric_id__in=view.metric_ids)),
            run_withheld=withheld_state(query),
            paired_entry=Subquery(Pairing.objects.filter(verified=OuterRef("pk")).values("reported_id")[:1]),
            per_task_reported=Exists(ReportedTaskResult.objects.filter(entry=OuterRef("pk"))),
        )
        .order_by()
        .values_list(*ENTRY_FIELDS, *ENTRY_ANNOTATIONS)
    )
    return list(rows)


def withheld_state(query: TableQuery) -> Subquery:
    """'hacked' or 'hidden' when a curator marked one of the verified run's fast_p scores so: the values
    computed from its per-task results (fast_p at any p, the curve) then stay out as well."""
    curated = Score.objects.verified().filter(
        run_id=OuterRef("verified_run"),
        baseline=query.verified_baseline,
        metric_id__in=scoring.REPORTED_FAST_P.values(),
        state__in=(CurationState.HACKED, CurationState.HIDDEN),
    )
    return Subquery(curated.order_by("state").values("state")[:1])  # 'hacked' sorts first


def fetch_candidates(filter_q: Q, query: TableQuery, detail: bool) -> list[Candidate]:
    fields = LIGHT_FIELDS + DETAIL_FIELDS if detail else LIGHT_FIELDS
    rows = table_scores(query).filter(filter_q).order_by().values_list(*fields)
    return [Candidate(*row) for row in rows]


def fetch_outcomes(run_ids: Iterable[int], baseline: str) -> dict[int, list[scoring.TaskOutcome]]:
    """Per-task outcomes (sample 0) of these runs against a baseline, as scoring reads them."""
    run_ids = list(run_ids)
    if not run_ids:
        return {}
    speedup = "speedup_compile" if baseline == Baseline.COMPILE else "speedup_eager"
    rows = (
        TaskResult.objects.filter(run_id__in=run_ids, kernel__sample=0)
        .order_by()
        .values_list("run_id", "correct", speedup, "flags")
    )
    outcomes: dict[int, list[scoring.TaskOutcome]] = defaultdict(list)
    for run_id, correct, value, flags in rows:
        outcomes[run_id].append(scoring.task_outcome(correct, value, flags))
    return outcomes


def fetch_reported_outcomes(entry_ids: Iterable[int]) -> dict[int, list[scoring.TaskOutcome]]:
    """Per-task outcomes (sample 0) of reported entries imported from eval_results.json, by entry."""
    entry_ids = list(entry_ids)
    if not entry_ids:
        return {}
    rows = (
        ReportedTaskResult.objects.filter(entry_id__in=entry_ids, sample_id=0)
        .order_by()
        .values_list("entry_id", "correct", "speedup")
    )
    outcomes: dict[int, list[scoring.TaskOutcome]] = defaultdict(list)
    for entry_id, correct, speedup in rows:
        outcomes[entry_id].append(scoring.TaskOutcome(correct, speedup))
    return outcomes
