"""A method's history: every submission of it and each of its runs, newest first, as the public may see
them (the owner, the team's members and staff also see the bundle's name)."""

from leaderboard.models import EvaluationRun, Score, Submission
from leaderboard.submissions.public import public_text


def may_see_private(user, submission: Submission) -> bool:
    if not user.is_authenticated:
        return False
    if user.is_staff or user.pk == submission.user_id:
        return True
    return submission.team_id is not None and submission.team.has_member(user)


def run_fast_1(run_ids) -> dict[int, float]:
    """Each run's verified Fast1 against eager (hidden ones left out)."""
    rows = Score.objects.verified().shown().filter(run_id__in=run_ids, metric_id="fast_1", baseline="eager")
    return dict(rows.values_list("run_id", "value"))


def method_history(method, user) -> list[dict]:
    """One row per submission of the method, newest first, each with its runs (newest first)."""
    submissions = list(
        Submission.objects.filter(entry__method=method)
        .select_related("entry__level", "hardware", "team")
        .order_by("-created", "-pk")
    )
    runs: dict[int, list[EvaluationRun]] = {}
    for run in (
        EvaluationRun.objects.filter(submission__in=submissions)
        .select_related("hardware")
        .order_by("-created", "-pk")
    ):
        runs.setdefault(run.submission_id, []).append(run)
    fast_1 = run_fast_1([run.pk for group in runs.values() for run in group])
    rows = []
    for submission in submissions:
        private = may_see_private(user, submission)
        rows.append(
            {
                "submission": submission,
                "reason": public_text(submission.reason),
                "bundle_name": submission.bundle_name if private else "",
                "runs": [{"run": run, "fast_1": fast_1.get(run.pk)} for run in runs.get(submission.pk, [])],
            }
        )
    return rows
