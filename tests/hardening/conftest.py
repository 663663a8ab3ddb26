"""Fixtures of the hardening suite that need Django (the GPU host runs the rest with --noconftest)."""

import pytest

from tests.submissions.conftest import cpu, make_tasks, user, workers  # noqa: F401 - fixtures, re-used

STORED_MODELS = (
    "Submission",
    "SubmissionKernel",
    "KernelSource",
    "Entry",
    "Method",
    "EvaluationRun",
    "Score",
)


@pytest.fixture
def evaluation_settings(settings, tmp_path):
    """A private work folder, CPU evaluation, the eager baseline only and immediate retries."""
    settings.EVALUATION_RETRY_INTERVALS = [0]
    settings.EVALUATOR = {**settings.EVALUATOR, "WORK_DIR": tmp_path / "work", "DEVICE": "cpu"}
    return settings


@pytest.fixture
def stored_counts(db):
    """A function returning how many rows each stored model holds (to show nothing was half-stored)."""
    from django.apps import apps

    def counts() -> dict[str, int]:
        return {name: apps.get_model("leaderboard", name).objects.count() for name in STORED_MODELS}

    return counts
