"""Real harness result files into TaskResults, and a completed run into verified scores (both baselines)."""

import json

import pytest

from evaluator import HARNESS_VERSION
from leaderboard import scoring
from leaderboard.models import Baseline, CurationState, EvaluationRun, Provenance, Score, TaskResult
from leaderboard.submissions import execution, verified
from leaderboard.submissions.ingest import BadResult, read_result, store_result
from leaderboard.submissions.intake import EntryDetails, submit_bundle
from tests.submissions.samples import TORCH_RELU_KERNEL, kernel_name, result_file, zip_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(user, cpu, tasks_l1, redis_conn):
    files = {kernel_name(1, p): TORCH_RELU_KERNEL + f"# {p}\n" for p in (1, 2, 3)}
    [submission] = submit_bundle(user, zip_bytes(files), "r.zip", EntryDetails(method_name="V", hardware=cpu))
    return submission.current_run


def honest(name: str) -> dict:
    """A real result, less the flags the harness raised on it (to test the unflagged path)."""
    result = result_file(name)
    result["flags"] = [flag for flag in result["flags"] if flag["severity"] == "info"]
    return result


def kernels(run):
    return list(run.submission.kernels.order_by("task__problem_id"))


def test_a_result_is_stored_once_with_its_fields(run):
    kernel = kernels(run)[0]
    stored = store_result(run, kernel, result_file("triton_relu_correct"))
    again = store_result(run, kernel, result_file("compile_error"))
    assert again.pk == stored.pk
    assert TaskResult.objects.count() == 1
    assert stored.compiled
    assert stored.correct
    assert stored.task_id == kernel.task_id
    assert stored.speedup_eager == pytest.approx(result_file("triton_relu_correct")["speedup"]["eager"])
    assert stored.runtime_ms["n"] > 0
    assert "log" not in stored.raw


def test_compile_errors_keep_their_kind_and_message(run):
    stored = store_result(run, kernels(run)[0], result_file("compile_error"))
    assert (stored.compiled, stored.correct, stored.error_kind) == (False, False, "compile_error")
    assert "SyntaxError" in stored.error_message
    assert stored.speedup_eager is None


def test_non_finite_numbers_are_stored_as_null(run):
    result = honest("torch_relu_correct")
    result["speedup"] = {"eager": float("nan"), "compile": float("inf")}
    result["runtime_ms"]["mean"] = float("nan")
    stored = store_result(run, kernels(run)[0], result)
    assert stored.speedup_eager is None
    assert stored.speedup_compile is None
    assert TaskResult.objects.get(pk=stored.pk).runtime_ms["mean"] is None


def test_files_that_are_not_results_are_refused(tmp_path):
    bad = tmp_path / "k1.json"
    for text in ("{not json", json.dumps({"schema": 2}), json.dumps({"schema": 1, "compiled": True})):
        bad.write_text(text)
        with pytest.raises(BadResult):
            read_result(bad)


def complete(run, results):
    for kernel, result in zip(kernels(run), results, strict=False):
        store_result(run, kernel, result)
    EvaluationRun.objects.filter(pk=run.pk).update(status="running")
    run.refresh_from_db()
    return verified.write_scores(run)


def test_scores_match_the_scoring_module_for_both_baselines(run):
    results = [honest("triton_relu_correct"), honest("torch_relu_correct"), result_file("compile_error")]
    scores = complete(run, results)
    by_key = {(s.metric_id, s.baseline): s for s in scores}
    eager = [r["speedup"]["eager"] for r in results[:2]]
    outcomes = [scoring.TaskOutcome(True, s) for s in eager] + [scoring.TaskOutcome(False, None)]
    expected = scoring.aggregate(outcomes, 3)
    for metric_id, aggregate in expected.items():
        score = by_key[(metric_id, Baseline.EAGER)]
        assert score.value == pytest.approx(aggregate.value)
        assert (score.ci_low, score.ci_high) == (aggregate.ci_low, aggregate.ci_high)
        assert (score.aggregation, score.denominator) == (aggregate.aggregation, aggregate.denominator)
    assert by_key[("correct_rate", Baseline.EAGER)].value == pytest.approx(200 / 3)
    assert by_key[("speedup_geomean", Baseline.COMPILE)].value == pytest.approx(
        scoring.geomean([r["speedup"]["compile"] for r in results[:2]])
    )
    geomean = by_key[("speedup_geomean", Baseline.EAGER)]
    assert geomean.ci_low <= geomean.value <= geomean.ci_high
    assert all(s.provenance == Provenance.VERIFIED and s.run_id == run.pk for s in scores)
    assert all(s.n_tasks == 3 and s.harness_version == HARNESS_VERSION for s in scores)
    assert all("not a GPU verification" in s.notes for s in scores)
    assert {s.state for s in scores} == {CurationState.VISIBLE}


def test_fast_p_for_any_p_comes_from_stored_speedups(run):
    results = [honest("triton_relu_correct"), honest("torch_relu_correct")]
    complete(run, results)
    threshold = min(r["speedup"]["eager"] for r in results)
    assert verified.fast_p_of_run(run, threshold - 1e-9) == pytest.approx(200 / 3)
    assert verified.fast_p_of_run(run, threshold) == pytest.approx(100 / 3)  # strict >


def test_hack_flags_count_as_incorrect_and_flag_the_scores(run):
    hacked = result_file("torch_relu_correct")  # the harness raised a 'hack' flag on it
    assert any(flag["severity"] == "hack" for flag in hacked["flags"])
    scores = complete(run, [hacked, honest("triton_relu_correct")])
    correct = next(s for s in scores if s.metric_id == "correct_rate" and s.baseline == Baseline.EAGER)
    assert correct.value == pytest.approx(100 / 3)
    assert {s.state for s in scores} == {CurationState.FLAGGED}
    assert "level_1_problem_1" in correct.state_reason


def test_writing_twice_changes_nothing_and_a_new_run_adds_scores(run):
    results = [honest("triton_relu_correct")]
    first = complete(run, results)
    assert complete(run, results)
    assert Score.objects.count() == len(first)
    second = run.submission.runs.create(
        harness_version="1.0.1", device="cpu", hardware=run.hardware, queue="cpu", status="running"
    )
    store_result(second, kernels(run)[0], results[0])
    verified.write_scores(second)
    assert Score.objects.filter(run=run).count() == Score.objects.filter(run=second).count() == len(first)
    assert set(Score.objects.values_list("harness_version", flat=True)) == {HARNESS_VERSION, "1.0.1"}


def test_a_run_where_nothing_compiled_fails_with_its_reason(run):
    for kernel in kernels(run):
        store_result(run, kernel, result_file("compile_error"))
    status, reason = execution.judge(run)
    assert status == "failed"
    assert reason.startswith("no kernel compiled (3 compile_error)")
