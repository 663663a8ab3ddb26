"""The trusted side: KernelBench's seeds, input rules, null canaries, and the comparison of outputs."""

import torch

from evaluator.correctness import compare_trial
from evaluator.evaluate import flag_null_outputs
from evaluator.policy import make_policy
from evaluator.reference import TrialCase, kernelbench_trial_seeds, prepare_task
from evaluator.result import Result
from tests.evaluator.conftest import MATMUL, RELU, SOFTMAX_WIDE, cpu_task

HARDENED = make_policy("hardened", "cpu")
KERNELBENCH = make_policy("kernelbench", "cpu")


def test_kernelbench_trial_seeds_follow_its_recipe():
    torch.manual_seed(42)
    recipe = [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(5)]
    assert kernelbench_trial_seeds(5) == recipe
    assert len(set(recipe)) == 5


def test_prepared_task_holds_every_trial_and_never_gives_expected_outputs_to_the_child():
    task = prepare_task(MATMUL, HARDENED)
    distributions = [trial.distribution for trial in task.trials]
    assert distributions[:5] == ["task"] * 5
    assert {"signed", "heavy_tailed"} <= set(distributions)
    assert len(task.timing_sets) == HARDENED.timing.rotate_inputs
    assert len(task.post_trials) == 1
    assert task.post_trials[0].order == "reference_first"
    payload = task.child_payload()
    assert "expected" not in repr(payload.keys())
    assert all("expected" not in trial for trial in payload["trials"])
    signed = next(trial for trial in task.trials if trial.distribution == "signed")
    assert (signed.inputs[0] < 0).any()


def test_integer_inputs_stay_integer():
    task = prepare_task(cpu_task(1, "6_CrossEntropyLoss"), HARDENED)
    predictions, targets = task.trials[0].inputs
    assert predictions.dtype == torch.float32
    assert targets.dtype == torch.int64
    assert task.trials[0].expected.dim() == 0


def test_null_canaries_mark_degenerate_tasks():
    assert prepare_task(SOFTMAX_WIDE, KERNELBENCH).degenerate  # all outputs below 1e-4: zeros pass
    relu = prepare_task(RELU, KERNELBENCH)
    assert {c["name"]: c["passed"] for c in relu.canaries} == {
        "zeros": False,
        "constant": False,
        "input": True,
    }
    constant = prepare_task(cpu_task(2, "4_Gemm_Max_SubtractMean_GELU"), KERNELBENCH)
    assert constant.degenerate
    assert not prepare_task(MATMUL, KERNELBENCH).degenerate


def test_outputs_next_to_a_passing_canary_are_null_outputs():
    task = prepare_task(SOFTMAX_WIDE, KERNELBENCH)  # zeros pass: every output is below 1e-4

    def flags_for(make):
        result = Result(mode="kernelbench", device="cpu", task={}, kernel={})
        outputs = [make(trial.expected) for trial in task.trials]
        flag_null_outputs(task, result, outputs, KERNELBENCH.tolerance)
        return {flag.code for flag in result.flags}

    assert "null_output" in flags_for(torch.zeros_like)
    assert "null_output" in flags_for(lambda expected: torch.full_like(expected, 1e-12))
    assert flags_for(lambda expected: expected.clone()) == set()
    assert flags_for(lambda expected: expected * (1 + 1e-6)) == set()  # an honest kernel's rounding


def case(expected: torch.Tensor, distribution: str = "task") -> TrialCase:
    return TrialCase(seed=1, distribution=distribution, order="candidate_first", inputs=[], expected=expected)


def report(**overrides):
    return {"exact_tensor": True, "device": "cpu", "aliases": False, "mutated": False, **overrides}


def test_compare_accepts_an_exact_match_and_reports_zero_error():
    expected = torch.rand(4, 4)
    verdict = compare_trial(case(expected), expected.clone(), report(), HARDENED)
    assert verdict.trial.passed
    assert verdict.error_kind is None
    assert verdict.trial.max_abs_error == 0.0


def test_compare_names_each_structural_failure():
    expected = torch.rand(4, 4)
    assert (
        compare_trial(case(expected), None, report(exact_tensor=False, type="Fake"), HARDENED).error_kind
        == "not_a_tensor"
    )
    assert (
        compare_trial(case(expected), expected, report(mutated=True), HARDENED).error_kind == "mutated_input"
    )
    assert (
        compare_trial(case(expected), expected, report(aliases=True), HARDENED).error_kind == "aliases_input"
    )
    assert (
        compare_trial(case(expected), expected, report(device="cuda"), HARDENED).error_kind == "wrong_device"
    )
    assert compare_trial(case(expected), expected[:2], report(), HARDENED).error_kind == "wrong_shape"
    assert compare_trial(case(expected), expected.double(), report(), HARDENED).error_kind == "wrong_dtype"


def test_kernelbench_mode_does_not_check_inputs():
    expected = torch.rand(4, 4)
    assert compare_trial(
        case(expected), expected.clone(), report(mutated=True, aliases=True), KERNELBENCH
    ).trial.passed


def test_new_nan_fails_as_nan_inf_in_hardened_mode():
    expected = torch.rand(4, 4)
    output = expected.clone()
    output[0, 0] = float("nan")
    verdict = compare_trial(case(expected), output, report(), HARDENED)
    assert verdict.error_kind == "nan_inf"
    assert verdict.trial.max_abs_error is None


def test_tolerance_is_kernelbench_allclose():
    expected = torch.full((8,), 1.0)
    assert compare_trial(case(expected), expected + 1.5e-4, report(), KERNELBENCH).trial.passed
    verdict = compare_trial(case(expected), expected + 5e-4, report(), KERNELBENCH)
    assert verdict.error_kind == "wrong_values"
    assert verdict.trial.max_abs_error > 4e-4


def test_signed_trials_scale_the_absolute_tolerance_with_the_output():
    expected = torch.tensor([1000.0, 0.0])
    close = torch.tensor([1000.0, 0.05])
    assert not compare_trial(case(expected), close, report(), HARDENED).trial.passed
    assert compare_trial(case(expected, "signed"), close, report(), HARDENED).trial.passed


def test_each_child_gets_its_own_copy_of_the_inputs(tmp_path):
    task = prepare_task(RELU, HARDENED)
    first, second = tmp_path / "a.pt", tmp_path / "b.pt"
    task.write_payload(first)
    cached = task.payload_file
    first.write_bytes(b"tampered by a candidate")
    task.write_payload(second)
    assert task.payload_file == cached
    payload = torch.load(second, weights_only=True)
    assert torch.equal(payload["trials"][0]["inputs"][0], task.trials[0].inputs[0])
    assert "expected" not in payload["trials"][0]
