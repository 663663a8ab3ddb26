"""Inputs from seeds, the reference's chunked comparison, null canaries and the trusted verdict rules."""

import pytest
import torch

from evaluator import checks
from evaluator.child import compare, inputs
from evaluator.child.fingerprint import fingerprint
from evaluator.policy import KERNELBENCH_TRIAL_SEEDS, make_policy
from evaluator.result import Correctness, Result, Trial, writable
from evaluator.trusted.correctness import (
    TrialOutcome,
    TrialSpec,
    canary_verdicts,
    flag_null_outputs,
    structure_error,
    trial_specs,
    value_error,
)

HARDENED = make_policy("hardened", "cpu")
ERRORS = ("max_abs_error", "max_rel_error")
KERNELBENCH = make_policy("kernelbench", "cpu")


def get_inputs():
    return [torch.rand(4, 8), torch.randint(0, 5, (4,))]


def test_both_processes_draw_the_same_inputs_from_a_seed():
    first = inputs.make_inputs(get_inputs, 123, "task", "cpu")
    second = inputs.make_inputs(get_inputs, 123, "task", "cpu")
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
    assert fingerprint(first[0], 5) == fingerprint(second[0], 5)
    assert not torch.equal(first[0], inputs.make_inputs(get_inputs, 124, "task", "cpu")[0])


def test_integer_inputs_stay_integer_and_other_distributions_redraw_floats():
    floats, targets = inputs.make_inputs(get_inputs, 1, "task", "cpu")
    assert floats.dtype == torch.float32
    assert targets.dtype == torch.int64
    signed, same_targets = inputs.make_inputs(get_inputs, 1, "signed", "cpu")
    assert (signed < 0).any()
    assert not (floats < 0).any()
    assert torch.equal(same_targets, targets)
    heavy, _ = inputs.make_inputs(get_inputs, 1, "heavy_tailed", "cpu")
    assert heavy.abs().max() > signed.abs().max() / 10


def test_other_distributions_draw_into_the_task_s_own_tensors_and_never_into_shared_memory():
    base, made = torch.rand(6, 6), []
    untouched = base.clone()

    def get_inputs():
        made[:] = [torch.rand(64, 64), base, base.t(), 3]
        return list(made)

    for name in ("signed", "heavy_tailed"):
        own, shared, view, number = inputs.make_inputs(get_inputs, 7, name, "cpu")
        assert own is made[0]
        assert (own < 0).any()
        assert shared is not base
        assert view.data_ptr() != shared.data_ptr()
        assert torch.equal(base, untouched)
        assert view.shape == (6, 6)
        assert torch.isfinite(view).all()
        assert number == 3
        again = inputs.make_inputs(get_inputs, 7, name, "cpu")
        assert all(torch.equal(a, b) for a, b in zip(again[:3], (own, shared, view), strict=True))


def test_a_heavy_tailed_draw_takes_its_signs_chunk_by_chunk(monkeypatch):
    monkeypatch.setattr(inputs, "SIGN_CHUNK", 1_000)  # a 64 × 64 input: five chunks, the last one short
    made = [torch.empty(64, 64)]
    heavy = inputs.make_inputs(lambda: list(made), 3, "heavy_tailed", "cpu")[0]
    assert heavy is made[0]
    for start in range(0, heavy.numel(), 1_000):
        part = heavy.view(-1)[start : start + 1_000]
        assert (part < 0).any()
        assert (part > 0).any()
    again = inputs.make_inputs(lambda: [torch.empty(64, 64)], 3, "heavy_tailed", "cpu")[0]
    assert torch.equal(heavy, again)


def test_projection_weights_come_from_the_allocator_s_small_blocks():
    from evaluator.child import fingerprint as prints

    # PyTorch's CUDA allocator serves requests of at most 1 MiB from its small-block pool.
    assert prints.BLOCK * torch.float32.itemsize <= 1 << 20
    assert prints.BLOCK * prints.TORCH_PATH_BLOCKS == 1 << 24  # the torch path's chunk, as before


def test_the_trials_are_kernelbench_s_then_the_hardened_extras():
    specs = trial_specs(HARDENED)
    assert [spec.seed for spec in specs[:5]] == list(KERNELBENCH_TRIAL_SEEDS)
    assert {spec.distribution for spec in specs[5:]} == {"signed", "heavy_tailed"}
    assert {spec.order for spec in specs} == {"candidate_first"}
    assert {spec.order for spec in trial_specs(KERNELBENCH)} == {"reference_first"}
    assert len(trial_specs(KERNELBENCH)) == 5


def compared(expected, output, distribution="task", chunk=3, canaries=False, first_input=None, tol=1e-4):
    expectation = compare.Expectation(expected, distribution, tol, float(expected.mean()), first_input)
    comparison = compare.Comparison(expectation, 9, canaries)
    flat = output.reshape(-1)
    for offset in range(0, flat.numel(), chunk):
        comparison.update(flat[offset : offset + chunk], offset)
    return comparison.verdict()


def test_an_exact_match_passes_both_rules_with_zero_error_and_the_same_fingerprint():
    expected = torch.rand(4, 5)
    verdict = compared(expected, expected.clone())
    assert verdict["complete"]
    assert verdict["close_hardened"]
    assert verdict["close_kernelbench"]
    assert verdict["max_abs_error"] == 0.0
    # streamed in chunks of 3 or taken whole: the same up to the float32 rounding of the projection's sums
    assert checks.identical(verdict["fingerprint"], fingerprint(expected, 9))
    assert verdict["fingerprint"][: checks.PROJECTION] == pytest.approx(
        fingerprint(expected, 9)[: checks.PROJECTION]
    )


def test_an_error_too_large_for_float32_is_reported_as_not_finite_and_the_result_stays_writable():
    expected = torch.full((6,), 0.5)
    output = expected.clone()
    output[2] = 3e38  # a finite difference whose relative error overflows (stale memory reads like this)
    verdict = compared(expected, output)
    assert not verdict["close_hardened"]
    assert verdict["max_abs_error"] == pytest.approx(3e38, rel=1e-6)
    assert verdict["max_rel_error"] is None
    result = Result(mode="hardened", device="cpu", task={"name": "t"}, kernel={"backend": "torch"})
    trial = Trial(1, "task", "candidate_first", False, *map(verdict.get, ERRORS))
    result.correctness = Correctness(1e-4, 1e-4, [trial])
    assert writable(result).error is None


def test_chunks_out_of_order_or_missing_are_refused_or_incomplete():
    expected = torch.rand(10)
    expectation = compare.Expectation(expected, "task", 1e-4)
    comparison = compare.Comparison(expectation, 1, False)
    comparison.update(expected[:4], 0)
    with pytest.raises(ValueError, match="out of order"):
        comparison.update(expected[6:], 6)
    assert comparison.verdict()["complete"] is False


def test_tolerance_is_kernelbench_allclose():
    expected = torch.full((8,), 1.0)
    assert compared(expected, expected + 1.5e-4)["close_kernelbench"]
    verdict = compared(expected, expected + 5e-4)
    assert not verdict["close_kernelbench"]
    assert not verdict["close_hardened"]
    assert verdict["max_abs_error"] > 4e-4


def test_nan_is_never_close_for_kernelbench_and_is_new_nonfinite_when_hardened():
    expected = torch.rand(6)
    output = expected.clone()
    output[2] = float("nan")
    verdict = compared(expected, output)
    assert not verdict["close_kernelbench"]
    assert verdict["new_nonfinite"] == 1
    assert verdict["max_abs_error"] is None
    both = expected.clone()
    both[2] = float("nan")
    assert compared(both, both.clone())["close_hardened"]


def test_signed_trials_scale_the_absolute_tolerance_with_the_output():
    expected = torch.tensor([1000.0, 0.0])
    close = torch.tensor([1000.0, 0.05])
    assert not compared(expected, close)["close_hardened"]
    assert compared(expected, close, "signed")["close_hardened"]


def test_canaries_are_judged_by_kernelbench_s_rule_in_chunks():
    tiny = torch.full((64,), 1e-6)
    verdicts = compare.canary_verdicts(compare.Expectation(tiny, "task", 1e-4, float(tiny.mean())))
    assert verdicts["zeros"]
    assert verdicts["constant"]
    values = torch.rand(64)
    relu = compare.Expectation(torch.relu(values), "task", 1e-4, float(values.mean()), values)
    assert compare.canary_verdicts(relu) == {"zeros": False, "constant": False, "input": True}
    assert compare.equal_to(relu, "input")


def outcome(distances, max_abs, passes=("zeros",), equal=()):
    trial = Trial(1, "task", "candidate_first", passed=True, max_abs_error=max_abs)
    return TrialOutcome(trial, {name: name in passes for name in compare.CANARIES}, list(equal), distances)


def null_flags(outcomes):
    result = Result(mode="kernelbench", device="cpu", task={}, kernel={})
    flag_null_outputs(result, outcomes)
    return {flag.code for flag in result.flags}


def test_outputs_at_or_next_to_a_passing_canary_are_null_outputs():
    expected = torch.full((64,), 5e-5)  # zeros pass: every output is below 1e-4
    for make, null in [
        (torch.zeros_like, True),
        (lambda e: torch.full_like(e, 1e-12), True),
        (lambda e: e.clone(), False),
        (lambda e: e * (1 + 1e-6), False),  # an honest kernel's rounding
    ]:
        verdict = compared(expected, make(expected), canaries=True)
        outcomes = [outcome(verdict["canaries"], verdict["max_abs_error"])] * 5
        assert ("null_output" in null_flags(outcomes)) is null


def test_matching_a_canary_the_reference_equals_is_no_evidence():
    distances = {"zeros": {"equal": True, "close": True, "distance": 0.0}}
    assert null_flags([outcome(distances, 0.0, equal=("zeros",))] * 5) == set()


def test_the_task_s_canaries_come_from_its_kernelbench_trials():
    outcomes = [outcome({}, 0.0, passes=("input",)) for _ in range(5)]
    verdicts = {item["name"]: item["passed"] for item in canary_verdicts(outcomes)}
    assert verdicts == {"zeros": False, "constant": False, "input": True}


def facts(**overrides):
    return {"exact_tensor": True, "device": "cpu", "shape": [4, 4], "dtype": "float32", "aliases": False,
            "mutated": False, **overrides}  # fmt: skip


def test_structure_errors_are_named_in_kernelbench_s_order():
    expected = {"shape": [4, 4], "dtype": "float32"}
    assert structure_error(facts(), expected, HARDENED) is None
    cases = {
        "not_a_tensor": facts(exact_tensor=False, type="Fake"),
        "mutated_input": facts(mutated=True),
        "aliases_input": facts(aliases=True),
        "wrong_device": facts(device="cuda"),
        "wrong_shape": facts(shape=[2, 4]),
        "wrong_dtype": facts(dtype="float64"),
    }
    for kind, produced in cases.items():
        assert structure_error(produced, expected, HARDENED)[0] == kind
    assert structure_error(facts(mutated=True, aliases=True), expected, KERNELBENCH) is None


def test_an_output_that_changed_after_returning_fails():
    expected = torch.rand(8)
    verdict = compared(expected, expected.clone())
    spec = TrialSpec(1, "task", "candidate_first")
    assert value_error(verdict, fingerprint(expected, 9), spec, HARDENED, 8) is None
    kind, message = value_error(verdict, fingerprint(torch.zeros(8), 9), spec, HARDENED, 8)
    assert kind == "wrong_values"
    assert "changed after forward returned" in message
    assert value_error({**verdict, "complete": False}, [], spec, HARDENED, 8)[0] == "sandbox_violation"
