"""Models of the leaderboard: what was measured (catalogue), how (metrics), the numbers (scores), the
submissions and their evaluations, and API tokens."""

from leaderboard.models.access import WindowedCounter
from leaderboard.models.catalogue import Baseline, Benchmark, Entry, Hardware, Level, Method, MethodKind
from leaderboard.models.curation import CurationState, Lane, Provenance
from leaderboard.models.evaluations import EvaluationRun, TaskResult
from leaderboard.models.freshness import DataVersion
from leaderboard.models.leaders import LeaderSnapshot
from leaderboard.models.metrics import (
    METRIC_COLUMNS,
    Aggregation,
    Denominator,
    Direction,
    Metric,
    ThresholdOp,
)
from leaderboard.models.scores import Pairing, ReportedTaskResult, Score, Source
from leaderboard.models.submissions import KernelSource, Submission, SubmissionEvent, SubmissionKernel
from leaderboard.models.teams import MethodOwnership, Team, TeamMembership
from leaderboard.models.tokens import ApiToken

__all__ = [
    "METRIC_COLUMNS",
    "Aggregation",
    "ApiToken",
    "Baseline",
    "Benchmark",
    "CurationState",
    "DataVersion",
    "Denominator",
    "Direction",
    "Entry",
    "EvaluationRun",
    "Hardware",
    "KernelSource",
    "Lane",
    "Level",
    "LeaderSnapshot",
    "WindowedCounter",
    "Method",
    "MethodKind",
    "MethodOwnership",
    "Metric",
    "Pairing",
    "Provenance",
    "ReportedTaskResult",
    "Score",
    "Source",
    "Submission",
    "SubmissionEvent",
    "SubmissionKernel",
    "TaskResult",
    "Team",
    "TeamMembership",
    "ThresholdOp",
]
