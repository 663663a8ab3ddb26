"""Fixtures of the serving tests: the submission tests' users, tasks and hardware."""

from tests.submissions.conftest import (  # noqa: F401 - fixtures, re-used
    cpu,
    evaluation_settings,
    make_tasks,
    tasks_l1,
    user,
    workers,
)
