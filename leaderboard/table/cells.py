"""A table's cells: which stored score a cell shows and the marks it carries (rules from scoring)."""

from dataclasses import dataclass, field

from django.urls import reverse

from leaderboard import intervals, scoring
from leaderboard.models import Aggregation, Baseline, CurationState, Denominator, Metric, Provenance
from leaderboard.table.fetch import Candidate


@dataclass(slots=True)
class Cell:
    """One metric of one row: the value it ranks by and where that value comes from."""

    metric: Metric
    reported: Candidate | None = None
    verified: Candidate | None = None
    also_reported: int = 0
    hacked: bool = False
    computed: float | None = None
    computed_p: float | None = None
    computed_run: int | None = None
    computed_n: int | None = None
    computed_reported: float | None = None
    paired: bool = False
    verified_value: float | None = field(init=False)
    reported_value: float | None = field(init=False)
    value: float | None = field(init=False)
    provenance: str = field(init=False)
    flagged: bool = field(init=False)

    def __post_init__(self):
        if self.computed is not None:
            self.verified_value = self.computed
        else:
            self.verified_value = self.verified.value if self.verified else None
        if self.computed_reported is not None:
            self.reported_value = self.computed_reported
        else:
            self.reported_value = self.reported.value if self.reported else None
        self.value = scoring.headline(self.verified_value, self.reported_value)
        if self.verified_value is not None:
            self.provenance = Provenance.VERIFIED
        else:
            self.provenance = Provenance.REPORTED if self.reported else ""
        self.flagged = (self.reported is not None and self.reported.state == CurationState.FLAGGED) or (
            self.verified is not None and self.verified.state == CurationState.FLAGGED
        )

    @property
    def raw(self) -> str:
        """The value at full precision, as data attributes and the CSV carry it."""
        return "" if self.value is None else repr(self.value)

    @property
    def shown(self) -> Candidate | None:
        """The stored score behind the headline value (for a computed fast_p, the stored one at that p)."""
        return self.verified if self.verified_value is not None else self.reported

    @property
    def run_id(self) -> int | None:
        if self.verified_value is None:
            return None
        return self.computed_run or (self.verified.run_id if self.verified else None)

    @property
    def ci(self) -> scoring.Interval | None:
        """The 95 % interval of the headline value (None: a reported number without per-task data)."""
        computed = self.computed if self.computed is not None else self.computed_reported
        if computed is not None:
            return intervals.percent_interval(computed, self.computed_n) if self.computed_n else None
        shown = self.shown
        return shown.interval if shown is not None and self.value is not None else None

    @property
    def difference(self) -> float | None:
        return scoring.difference(self.verified_value, self.reported_value)

    @property
    def aggregation_tag(self) -> str:
        """'A' or 'G' in the column that mixes arithmetic and geometric means (mean speedup)."""
        shown = self.shown
        if shown is None or self.metric.id != "speedup_mean":
            return ""
        return {Aggregation.ARITHMETIC: "A", Aggregation.GEOMETRIC: "G"}.get(shown.aggregation, "?")

    @property
    def baseline(self) -> str:
        shown = self.shown
        return shown.baseline if shown else ""

    @property
    def baseline_tag(self) -> str:
        """A short mark when the value is not measured against PyTorch eager."""
        return {Baseline.COMPILE: "compile", Baseline.NAIVE_CUDA: "naive CUDA", Baseline.UNSTATED: "?"}.get(
            self.baseline, ""
        )

    @property
    def threshold_op(self) -> str:
        if self.computed is not None or self.computed_reported is not None:
            return scoring.ThresholdOp.GT
        shown = self.shown
        return shown.threshold_op if shown else ""

    @property
    def empty(self) -> bool:
        """Nothing to show: no rankable value and no hacked mark."""
        return self.value is None and not self.hacked

    @property
    def link(self) -> str:
        """The run a verified value comes from, or the source of a reported one."""
        if self.run_id:
            return reverse("submissions:run", args=[self.run_id])
        return self.reported.source_link if self.reported else ""


AGGREGATION_LABELS = dict(Aggregation.choices)
BASELINE_LABELS = dict(Baseline.choices)
DENOMINATOR_LABELS = {key: label for key, label in Denominator.choices if key != Denominator.UNSTATED}


def build_cell(metric: Metric, candidates: list[Candidate], verified_run: int | None) -> Cell:
    """Choose what a cell shows from the scores stored for it (eligibility rules from scoring)."""
    if not candidates:
        return Cell(metric)
    if len(candidates) == 1:  # the common case, without the general path's bookkeeping
        only = candidates[0]
        if not only.rankable:
            return Cell(metric, hacked=only.state == CurationState.HACKED)
        if only.provenance == Provenance.REPORTED:
            return Cell(metric, reported=only)
        return Cell(metric, verified=only if only.run_id == verified_run else None)
    reported, verified = [], None
    for candidate in candidates:
        if not candidate.rankable:
            continue
        if candidate.provenance == Provenance.REPORTED:
            reported.append(candidate)
        elif candidate.run_id == verified_run and verified is None:
            verified = candidate
    shown_reported = None
    if reported:
        chosen = scoring.first_reported(c.id for c in reported)
        shown_reported = next(c for c in reported if c.id == chosen)
    return Cell(
        metric=metric,
        reported=shown_reported,
        verified=verified,
        also_reported=max(0, len(reported) - 1),
        hacked=any(c.state == CurationState.HACKED for c in candidates),
    )
