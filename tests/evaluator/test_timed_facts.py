"""The harness's judgement of every timed call's facts: a call's inputs, fingerprinted by the candidate's
process after the call, against the reference process's fingerprints of the same seed's inputs untouched."""

import pytest

from evaluator.policy import make_policy
from evaluator.result import Result
from evaluator.trusted.conversation import Stop
from evaluator.trusted.rounds import SideRound, Timing
from evaluator.trusted.speed import check_timed_facts, same_prints
from tests.evaluator.conftest import KERNELS, RELU

PRINT = [10.0, 12.0, 3.0, 0.0, 0.5] + [0.25] * 32


def timing(candidate_inputs: list) -> Timing:
    """One round of two calls: the reference's untouched prints for both seeds, the candidate's as given."""
    reference = [[seed, 1.0, [1.0], {"inputs": [PRINT]}] for seed in (11, 12)]
    candidate = [[seed, 1.0, [1.0], facts] for seed, facts in zip((11, 12), candidate_inputs, strict=True)]
    return Timing(
        [
            SideRound("candidate", {"candidate": candidate}, 5.0, [11, 12]),
            SideRound("reference", {"eager": reference}, 5.0, [11, 12]),
        ]
    )


def judge(candidate_inputs: list) -> Result:
    result = Result(mode="hardened", device="cpu", task={}, kernel={})
    check_timed_facts(result, timing(candidate_inputs), make_policy("hardened", "cpu"))
    return result


def test_inputs_that_came_back_as_they_went_in_pass():
    rounded = [value * (1 + 1e-12) for value in PRINT]  # the sums' rounding aside
    assert judge([{"inputs": [PRINT]}, {"inputs": [rounded]}]).flags == []


@pytest.mark.parametrize(
    "reported",
    [
        {"inputs": [[value * 0.5 for value in PRINT]]},  # scaled in place
        {},  # no fingerprints: nothing shows they were left alone
        {"inputs": [PRINT, PRINT]},  # more inputs than there were
        {"inputs": [["not", "numbers"]]},
        {"inputs": "untouched"},
        {"inputs": [PRINT], "mutated": True},  # the candidate's process saw a re-layout
    ],
)
def test_a_timed_call_whose_inputs_changed_or_went_unreported_fails_the_kernel(reported):
    with pytest.raises(Stop) as stop:
        judge([{"inputs": [PRINT]}, reported])
    assert stop.value.kind == "mutated_input"
    assert "1 of 2 timed calls" in stop.value.message


def test_a_call_the_reference_did_not_time_is_judged_by_what_the_candidate_s_process_saw():
    record = Timing([SideRound("candidate", {"candidate": [[5, 1.0, [1.0], {}]]}, 5.0, [5])])
    result = Result(mode="hardened", device="cpu", task={}, kernel={})
    check_timed_facts(result, record, make_policy("hardened", "cpu", baselines=()))
    assert result.flags == []


def test_kernelbench_mode_checks_no_inputs():
    result = Result(mode="kernelbench", device="cpu", task={}, kernel={})
    check_timed_facts(result, timing([{}, {}]), make_policy("kernelbench", "cpu"))
    assert result.flags == []
    assert same_prints([PRINT], [PRINT])
    assert not same_prints(None, [PRINT])


@pytest.mark.parametrize("baselines", ["eager", ""])
def test_inputs_changed_in_timed_calls_fail_with_or_without_a_baseline_timed(evaluate, baselines):
    """With a baseline, the reference's fingerprints judge them; with none, the candidate's process
    fingerprints its inputs before each call as well."""
    kernel = KERNELS / "adv_mutate_input_timed_only.py"
    code, result, output = evaluate(RELU, kernel, "--trials", "5", "--baselines", baselines)
    assert result["error"]["kind"] == "mutated_input", output
    assert "timed_call_violation" in {flag["code"] for flag in result["flags"]}
