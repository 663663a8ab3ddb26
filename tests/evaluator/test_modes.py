"""KernelBench mode reproduces KernelBench's verdicts, loopholes included; hardened mode closes them."""

import pytest

from tests.evaluator.conftest import KERNELS, RELU, SOFTMAX_WIDE

pytestmark = pytest.mark.slow

FAST = ("--baselines", "eager", "--trials", "3")


@pytest.mark.parametrize(
    ("task", "kernel", "hardened_error"),
    [
        (RELU, "adv_return_input", "aliases_input"),  # identity under torch.rand inputs (B13)
        (SOFTMAX_WIDE, "adv_constant_zeros", "wrong_values"),  # outputs below the tolerance (B11)
        (RELU, "adv_mutate_input", "mutated_input"),  # KernelBench runs the reference first (B5)
    ],
)
def test_a_loophole_passes_kernelbench_mode_and_fails_hardened_mode(evaluate, task, kernel, hardened_error):
    _, kernelbench, _ = evaluate(task, KERNELS / f"{kernel}.py", "--mode", "kernelbench", *FAST)
    assert kernelbench["correct"], kernelbench["error"]
    assert kernelbench["degenerate"]  # both tasks are degenerate under KernelBench rules
    _, hardened, _ = evaluate(task, KERNELS / f"{kernel}.py", "--mode", "hardened", *FAST)
    assert not hardened["correct"]
    assert hardened["error"]["kind"] == hardened_error


def test_v01_tolerance_is_looser(evaluate):
    options = ("--mode", "kernelbench", "--tolerance", "v0.1", *FAST)
    _, result, _ = evaluate(RELU, KERNELS / "honest_triton_relu.py", *options)
    assert result["correct"]
    assert result["correctness"]["atol"] == result["correctness"]["rtol"] == 0.01
