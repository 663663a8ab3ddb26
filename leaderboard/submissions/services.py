"""The submission workflows' former module, now split by job: `routing` (targets, queues), `intake` (a
bundle in) and `lifecycle` (queue, re-verify, cancel). Only `kernels_in_scope` remains, for the reaper."""

from leaderboard.models import Submission


def kernels_in_scope(submission: Submission, all_samples: bool):
    """The kernels a run of the submission evaluates (EvaluationRun.kernels_in_scope for a run)."""
    return submission.kernels.in_scope(all_samples)
