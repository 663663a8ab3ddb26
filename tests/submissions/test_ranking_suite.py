"""KernelBench as the ranking suite: once imported, new submissions target it; their verified scores are
over the whole level (missing tasks count as misses, as in KernelBench's fast_p) with n tasks recorded;
another suite or CPU timing gives separate-lane scores."""

from io import StringIO

import pytest
from django.core.management import call_command

from leaderboard import scoring
from leaderboard.models import Baseline, EvaluationRun, Hardware, Lane, Score
from leaderboard.submissions import verified
from leaderboard.submissions.ingest import store_result
from leaderboard.submissions.intake import EntryDetails, submit_bundle
from tests.leaderboard.test_views_support import page_rows
from tests.submissions.samples import TORCH_RELU_KERNEL, kernel_name, result_file, zip_bytes
from tests.tasks.test_kernelbench_suite import write_checkout

pytestmark = pytest.mark.django_db

LEVEL_1_PROBLEMS = 5


@pytest.fixture
def kernelbench(tmp_path, db):
    """A KernelBench checkout of five level-1 problems, imported as `import_tasks PATH` does."""
    call_command(
        "import_tasks", str(write_checkout(tmp_path / "kb", {1: LEVEL_1_PROBLEMS})), stdout=StringIO()
    )


@pytest.fixture
def h200(db):
    return Hardware.objects.get(name="H200")


def submit(user, hardware, problems, **details):
    files = {kernel_name(1, p): TORCH_RELU_KERNEL + f"# {p}\n" for p in problems}
    entry = EntryDetails(method_name="Ranked", hardware=hardware, **details)
    [submission] = submit_bundle(user, zip_bytes(files), "run.zip", entry)
    return submission


def fast_result(speedup: float) -> dict:
    """A correct result at this eager speedup, without the flags the harness raised on the recorded one."""
    result = result_file("triton_relu_correct")
    result["flags"] = [flag for flag in result["flags"] if flag["severity"] == "info"]
    result["speedup"] = {"eager": speedup, "compile": speedup / 2}
    return result


def complete(submission, results) -> dict[str, Score]:
    """Store the run's results (kernels in task order) and write its verified scores; eager ones by metric."""
    run = submission.current_run
    for kernel, result in zip(submission.kernels.order_by("task__problem_id"), results, strict=True):
        store_result(run, kernel, result)
    EvaluationRun.objects.filter(pk=run.pk).update(status="running")
    run.refresh_from_db()
    return {s.metric_id: s for s in verified.write_scores(run) if s.baseline == Baseline.EAGER}


def test_a_gpu_run_over_kernelbench_is_scored_over_the_whole_level_and_ranks(
    client, user, h200, kernelbench, redis_conn
):
    submission = submit(user, h200, [1, 2])  # no suite named: kernelbench, now that it is imported
    assert submission.suite == "kernelbench"
    assert submission.current_run.device == "cuda"
    assert submission.entry.n_tasks == LEVEL_1_PROBLEMS
    assert submission.entry.task_subset == "2 of 5 tasks (kernelbench suite)"

    scores = complete(submission, [fast_result(1.5), result_file("compile_error")])
    assert scores["fast_1"].value == pytest.approx(100 * 1 / LEVEL_1_PROBLEMS)  # 3 missing tasks are misses
    assert scores["correct_rate"].value == pytest.approx(100 * 1 / LEVEL_1_PROBLEMS)
    assert scores["speedup_geomean_all"].value == pytest.approx(1.5 ** (1 / LEVEL_1_PROBLEMS))
    expected = scoring.aggregate([scoring.TaskOutcome(True, 1.5), scoring.TaskOutcome(False, None)], 5)
    assert {k: s.value for k, s in scores.items()} == pytest.approx({k: a.value for k, a in expected.items()})
    assert {(s.n_tasks, s.suite, s.lane) for s in scores.values()} == {(5, "kernelbench", Lane.RANKING)}
    assert "2 of 5 tasks of the kernelbench suite submitted" in scores["fast_1"].notes

    [row] = page_rows(client.get("/levels/1/").content.decode())  # the default table shows it
    assert row.entry_id == submission.entry_id
    assert float(row.cells["fast_1"].value) == pytest.approx(20.0)
    data = client.get("/api/levels/1/leaderboard").json()["rows"][0]
    assert (data["n_tasks"], data["lane"], data["suite"]) == (5, "ranking", "kernelbench")
    assert data["scores"]["fast_1"]["n_tasks"] == 5


@pytest.mark.parametrize(
    ("target", "suite", "why"),
    [("CPU", "", "CPU timing"), ("H200", "builtin", "verified over the builtin suite")],
    ids=["kernelbench on the CPU", "the built-in suite on a GPU"],
)
def test_another_suite_or_cpu_timing_is_the_separate_lane(
    user, kernelbench, make_tasks, redis_conn, target, suite, why
):
    make_tasks((1, 1), (1, 2))  # builtin level-1 problems 1 and 2
    submission = submit(user, Hardware.objects.get(name=target), [1, 2], suite=suite)
    assert submission.suite == (suite or "kernelbench")
    scores = complete(submission, [fast_result(1.5), fast_result(0.5)])
    assert {s.lane for s in scores.values()} == {Lane.SEPARATE}
    assert {s.suite for s in scores.values()} == {submission.suite}
    assert f"Separate lane ({why}" in scores["fast_1"].notes
    assert "does not rank among full-suite results" in scores["fast_1"].notes
    n_tasks = LEVEL_1_PROBLEMS if submission.suite == "kernelbench" else 2
    assert scores["fast_1"].n_tasks == n_tasks
    assert scores["fast_1"].value == pytest.approx(100 / n_tasks)


def test_without_kernelbench_the_builtin_suite_stays_the_default(user, h200, make_tasks, redis_conn):
    make_tasks((1, 1))
    submission = submit(user, h200, [1])
    assert submission.suite == "builtin"
    assert {s.lane for s in complete(submission, [fast_result(2.0)]).values()} == {Lane.SEPARATE}
