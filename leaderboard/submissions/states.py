"""The submission state machine: which status may follow which, each change recorded with its reason."""

from django.db import transaction

from leaderboard.models import Submission, SubmissionEvent

Status = Submission.Status

NEXT_STATUS = {
    Status.RECEIVED: {Status.VALIDATED, Status.FAILED, Status.CANCELLED},
    Status.VALIDATED: {Status.QUEUED, Status.FAILED, Status.CANCELLED},
    Status.QUEUED: {Status.QUEUED, Status.RUNNING, Status.ERRORED, Status.CANCELLED},
    Status.RUNNING: {Status.QUEUED, Status.COMPLETED, Status.FAILED, Status.ERRORED, Status.CANCELLED},
    Status.ERRORED: {Status.QUEUED, Status.RUNNING, Status.ERRORED, Status.CANCELLED},
    # Re-verification sends a finished submission round again; its old runs stay.
    Status.COMPLETED: {Status.QUEUED},
    Status.FAILED: {Status.QUEUED},
    Status.CANCELLED: {Status.QUEUED},
}
"""Allowed transitions. QUEUED → QUEUED and ERRORED → ERRORED are requeues with a new reason."""


class InvalidTransition(Exception):
    """A status change the state machine does not allow."""


def can_move(current: str, new: str) -> bool:
    return new in NEXT_STATUS.get(current, set())


def move(submission_id: int, status: str, reason: str = "", **fields) -> Submission:
    """Change a submission's status under a row lock, record the event and return the fresh row.

    Extra keyword arguments are other Submission fields to set in the same update (done, total …).
    """
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission_id)
        if not can_move(submission.status, status):
            raise InvalidTransition(
                f"submission #{submission_id}: {submission.status} → {status} not allowed"
            )
        submission.status = status
        submission.reason = reason
        for name, value in fields.items():
            setattr(submission, name, value)
        submission.save(update_fields=["status", "reason", "updated", *fields])
        SubmissionEvent.objects.create(submission=submission, status=status, reason=reason)
    return submission


def record_creation(submission: Submission, reason: str = "") -> None:
    """Record the first status of a new submission."""
    SubmissionEvent.objects.create(submission=submission, status=submission.status, reason=reason)
