"""Fixtures of the serving tests: the submission tests' users, tasks and hardware, and the fault-injection
suite's fast CPU tasks, worker pool, API token and private Redis."""

from tests.hardening.test_fault_injection import cpu_fast, pool, private_redis, token  # noqa: F401
from tests.submissions.conftest import (  # noqa: F401 - fixtures, re-used
    cpu,
    evaluation_settings,
    make_tasks,
    tasks_l1,
    user,
    workers,
)
