"""Fixtures of the submission tests: tasks, users, bundles in every format, and real worker processes."""

import pytest
from django.core.management import call_command

from leaderboard.models import Hardware, Level
from tasks.models import Task
from tests.submissions.processes import Workers
from tests.submissions.samples import RELU_TASK


@pytest.fixture(autouse=True)
def evaluation_settings(settings, tmp_path):
    """Immediate RQ retries and a private work folder for every test."""
    settings.EVALUATION_RETRY_INTERVALS = [0]
    settings.EVALUATOR = {**settings.EVALUATOR, "WORK_DIR": tmp_path / "work", "DEVICE": "cpu"}
    return settings


@pytest.fixture
def make_tasks(db):
    """Create current tasks of suite 'builtin' from (level, problem_id) pairs; returns them by key."""

    def make(*keys, suite="builtin", source=RELU_TASK):
        made = {}
        for level_number, problem_id in keys:
            task = Task.objects.create(
                suite=suite,
                level=Level.objects.get(number=level_number),
                problem_id=problem_id,
                name=f"{problem_id}_Relu_{level_number}",
                content_hash=f"hash-{level_number}-{problem_id}",
                source=source,
            )
            made[task.key] = task
        return made

    return make


@pytest.fixture
def tasks_l1(make_tasks):
    return make_tasks((1, 1), (1, 2), (1, 3))


@pytest.fixture
def builtin_tasks(db):
    """The project's built-in suite, imported as `import_tasks --builtin` does; its tasks by key."""
    call_command("import_tasks", "--builtin", verbosity=0)
    return {task.key: task for task in Task.objects.filter(suite="builtin", is_current=True)}


@pytest.fixture
def cpu(db):
    return Hardware.objects.get(name="CPU")


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", password="a-long-password-1")


@pytest.fixture
def workers(tmp_path, redis_conn):
    pool = Workers(tmp_path)
    yield pool
    pool.stop_all()
