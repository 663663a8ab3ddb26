"""Settings of a batch beyond the manifest's basics: hardened timing's time budget (the timed calls per
variant cut, after the first round, to those that fill it at the slowest variant's median; never below two
rounds, never above the trials asked) and the one-pass threshold from the worker's environment."""

import pytest

from evaluator.manifest import ManifestError, read_manifest, write_manifest
from evaluator.policy import make_policy
from evaluator.trusted.batch import manifest_settings
from evaluator.trusted.settings import SettingsError, one_pass_bytes_from_environment
from evaluator.trusted.speed import timing_note
from tests.evaluator.conftest import KERNELS, RELU, run_cli


def test_the_rounds_fill_the_budget_between_two_rounds_and_all_of_them():
    plan = make_policy("hardened", "cuda", timing_budget_ms=1000).timing
    assert (plan.trials, plan.round_calls, plan.min_trials) == (100, 20, 40)
    assert plan.trials_within_budget(20.0) == 50
    assert plan.trials_within_budget(40.0) == 40  # 25 wanted, 40 at least
    assert plan.trials_within_budget(5.0) == 100  # 200 wanted, 100 at most
    assert plan.trials_within_budget(0.0) == 100  # nothing measured: all of them


def test_without_a_budget_every_call_runs():
    plan = make_policy("hardened", "cuda", timing_budget_ms=0).timing
    assert plan.budget_ms == 0
    assert plan.trials_within_budget(500.0) == plan.trials == 100


def test_on_a_gpu_the_budget_is_one_second_per_variant_unless_given_and_none_on_the_cpu():
    assert make_policy("hardened", "cuda").timing.budget_ms == 1000
    assert make_policy("hardened", "cuda", timing_budget_ms=250).timing.budget_ms == 250
    assert make_policy("hardened", "cpu").timing.budget_ms == 0
    assert make_policy("hardened", "cpu", timing_budget_ms=50).timing.budget_ms == 50
    assert make_policy("kernelbench", "cuda").timing.budget_ms == 0


def test_kernelbench_mode_keeps_its_fixed_count():
    plan = make_policy("kernelbench", "cuda", timing_budget_ms=1000).timing
    assert plan.budget_ms == 0
    assert plan.trials_within_budget(500.0) == plan.trials


def test_a_bad_budget_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(ValueError, match="timing_budget_ms"):
        make_policy("hardened", "cuda", timing_budget_ms=-1)
    kernel = {"id": "k", "task_path": str(RELU), "kernel_path": str(RELU)}
    path = write_manifest(tmp_path / "m.json", "cpu", "hardened", [kernel], timing_budget_ms="fast")
    with pytest.raises(ManifestError, match="bad manifest option"):
        manifest_settings(read_manifest(path), tmp_path / "cache")


@pytest.mark.parametrize(("budget", "timed"), [(None, 20), ("0.001", 10)])
def test_a_budget_cuts_the_timed_calls_and_says_so(evaluate, budget, timed):
    extra = ["--trials", "20", "--baselines", "eager"]
    if budget:
        extra += ["--timing-budget-ms", budget]
    code, result, output = evaluate(RELU, KERNELS / "honest_triton_relu.py", *extra)
    assert code == 0, output
    assert result["correct"], result["error"]
    assert result["timing"]["trials"] == timed
    assert result["speedup"]["eager"] is not None


def test_a_gpu_result_s_timing_note_names_the_budget():
    budgeted = timing_note(make_policy("hardened", "cuda", timing_budget_ms=1000))
    assert "as many as fill 1000 ms per variant" in budgeted
    assert "at least 40, at most 100" in budgeted
    assert "as many as fill" not in timing_note(make_policy("hardened", "cuda", timing_budget_ms=0))


def test_a_malformed_one_pass_threshold_stops_the_batch_with_its_name(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALUATOR_ONE_PASS_MIB", "256MB")
    with pytest.raises(SettingsError, match="EVALUATOR_ONE_PASS_MIB must be a whole number of MiB"):
        one_pass_bytes_from_environment()
    kernel = {"id": "k", "task_path": str(RELU), "kernel_path": str(KERNELS / "honest_triton_relu.py")}
    manifest = write_manifest(tmp_path / "m.json", "cpu", "hardened", [kernel])
    done = run_cli("batch", "--manifest", str(manifest), "--out", str(tmp_path / "out"))
    assert done.returncode != 0
    assert "EVALUATOR_ONE_PASS_MIB must be a whole number of MiB, not '256MB'" in done.stderr
    assert "Traceback" not in done.stderr
    monkeypatch.setenv("EVALUATOR_ONE_PASS_MIB", "64")
    assert one_pass_bytes_from_environment() == 64 << 20


def test_the_budget_reads_only_well_formed_times_of_the_first_round():
    from evaluator.trusted.rounds import Rounds, SideRound

    policy = make_policy("hardened", "cuda", timing_budget_ms=1000)
    rounds = Rounds(session=None, kernel=None, policy=policy, call_limit=1.0)
    forged = [[1, 40.0, [], {}], 7, "x", [2], [3, float("nan"), [], {}], [4, "slow", [], {}]]
    rounds.timing.rounds.append(SideRound("candidate", {"candidate": forged}, 50.0, [1, 2, 3, 4]))
    rounds.timing.rounds.append(SideRound("reference", {"eager": [[1, 20.0, [], {}]]}, 30.0, [1]))
    assert rounds.slowest_median() == 40.0  # a malformed report is judged later, as a sandbox_violation
    assert policy.timing.trials_within_budget(rounds.slowest_median()) == 40


def test_gpu_children_get_the_expandable_allocator_unless_the_worker_says_otherwise(monkeypatch):
    from evaluator.trusted.settings import CUDA_ALLOC_CONF, Settings, child_environment

    monkeypatch.delenv("EVALUATOR_CUDA_ALLOC_CONF", raising=False)
    gpu = Settings(policy=make_policy("hardened", "cuda"))
    assert child_environment(gpu)["PYTORCH_CUDA_ALLOC_CONF"] == CUDA_ALLOC_CONF == "expandable_segments:True"
    assert "PYTORCH_CUDA_ALLOC_CONF" not in child_environment(Settings(policy=make_policy("hardened", "cpu")))
    monkeypatch.setenv("EVALUATOR_CUDA_ALLOC_CONF", "")  # PyTorch's own default
    default = Settings(policy=make_policy("hardened", "cuda"))
    assert "PYTORCH_CUDA_ALLOC_CONF" not in child_environment(default)
    monkeypatch.setenv("EVALUATOR_CUDA_ALLOC_CONF", "max_split_size_mb:512")
    chosen = Settings(policy=make_policy("hardened", "cuda"))
    assert child_environment(chosen)["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:512"


def test_the_round_size_can_be_chosen_and_the_budget_still_keeps_forty_calls():
    plan = make_policy("hardened", "cuda", round_calls=5).timing
    assert (plan.round_calls, plan.round_ms, plan.min_trials) == (5, 0, 40)
    assert plan.trials_within_budget(40.0) == 40  # 25 wanted, 40 at least: eight rounds of five
    assert make_policy("hardened", "cuda", round_calls=500).timing.round_calls == 100  # at most the trials
    assert make_policy("kernelbench", "cuda", round_calls=5).timing.round_calls == 101  # one block, as before
    with pytest.raises(ValueError, match="round_calls must be at least 1"):
        make_policy("hardened", "cuda", round_calls=0)


def test_the_round_size_reaches_the_policy_from_the_manifest_and_the_command_line(tmp_path, evaluate):
    assert "in rounds of 5 calls" in timing_note(make_policy("hardened", "cuda", round_calls=5))
    kernel = {"id": "k", "task_path": str(RELU), "kernel_path": str(KERNELS / "honest_triton_relu.py")}
    path = write_manifest(tmp_path / "m.json", "cpu", "hardened", [kernel], round_calls=2)
    assert manifest_settings(read_manifest(path), tmp_path / "cache").policy.timing.round_calls == 2
    extra = ["--trials", "6", "--round-calls", "2", "--baselines", "eager"]
    code, result, output = evaluate(RELU, KERNELS / "honest_triton_relu.py", *extra)
    assert code == 0, output
    assert result["correct"], result["error"]
    assert result["runtime_ms"]["n"] == result["baseline_ms"]["eager"]["n"] == 6
