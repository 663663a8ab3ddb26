"""Odd outputs: infinities, complex and float8 values, every dtype's size, sizes that depend on the inputs."""

import itertools
import math
from types import SimpleNamespace

import pytest
import torch

from evaluator.checks import identical
from evaluator.child import compare
from evaluator.child.fingerprint import Accumulator, fingerprint, real_numel
from evaluator.trusted.conversation import Stop
from evaluator.trusted.correctness import Trials, dtype_size
from evaluator.trusted.session import Problem

TOL = 1e-4
INF, NAN = math.inf, math.nan
REALS = (0.0, 1.0, -1.0, 1.00001, 1e30, INF, -INF, NAN)
COMPLEXES = tuple(complex(re, im) for re in (0.0, 1.0, INF, -INF, NAN) for im in (0.0, 1.00001, -INF))
FLOAT8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def compared(expected: torch.Tensor, output: torch.Tensor, distribution: str = "task", **kwargs) -> dict:
    """The reference's verdict on output, fed in two chunks."""
    comparison = compare.Comparison(compare.Expectation(expected, distribution, TOL, **kwargs), 7, True)
    flat, half = output.reshape(-1), output.numel() // 2
    comparison.update(flat[:half], 0)
    comparison.update(flat[half:], half)
    return comparison.verdict()


@pytest.mark.parametrize(
    ("dtype", "values"),
    [(torch.float32, REALS), (torch.float64, REALS), (torch.complex64, COMPLEXES)],
)
def test_the_kernelbench_rule_is_torch_allclose_with_infinities_and_nan(dtype, values):
    pairs = list(itertools.product(values, repeat=2))
    for a, b in pairs:
        expected, output = torch.tensor([a], dtype=dtype), torch.tensor([b], dtype=dtype)
        wanted = torch.allclose(expected, output, atol=TOL, rtol=TOL)
        assert compare.kernelbench_close(expected, output, TOL) == wanted, (a, b)
        assert compared(expected, output)["close_kernelbench"] == wanted, (a, b)
    expected = torch.tensor([a for a, _ in pairs], dtype=dtype)
    output = torch.tensor([b for _, b in pairs], dtype=dtype)
    assert not compare.kernelbench_close(expected, output, TOL)
    assert compare.kernelbench_close(expected[:3], expected[:3].clone(), TOL)  # no NaN among the first three


def test_an_infinite_output_fails_where_the_reference_is_finite_in_both_modes():
    expected = torch.rand(64) * 2
    verdict = compared(expected, torch.full_like(expected, INF))
    assert not verdict["close_kernelbench"]
    assert not verdict["close_hardened"]
    assert verdict["new_nonfinite"] == 64


@pytest.mark.parametrize("distribution", ["task", "signed"])
def test_the_hardened_rule_passes_an_infinity_only_where_the_reference_has_the_same_one(distribution):
    expected = torch.tensor([-INF, 0.25, INF, NAN, -INF, 2.0])
    assert compared(expected, expected.clone(), distribution)["close_hardened"]
    for index, wrong in [(0, 123.0), (0, INF), (2, -INF), (2, 3e38), (1, -INF)]:
        output = expected.clone()
        output[index] = wrong
        verdict = compared(expected, output, distribution)
        assert not verdict["close_hardened"], (index, wrong)
        assert not verdict["close_kernelbench"], (index, wrong)
        assert verdict["max_abs_error"] is None  # a difference that is not finite is reported as such


def test_a_minus_infinity_constant_canary_fails_a_partly_finite_reference():
    expected = torch.log(torch.relu(torch.linspace(0, 1, 256) - 0.5))  # half -inf, half finite
    constant = compare.mean(expected)
    assert constant == -INF
    expectation = compare.Expectation(expected, "task", TOL, constant=constant)
    assert compare.canary_verdicts(expectation) == {"zeros": False, "constant": False}
    verdict = compared(expected, torch.full_like(expected, -INF), constant=constant)
    assert verdict["canaries"]["constant"]["equal"]  # the output is that canary...
    assert not verdict["close_kernelbench"]  # ...and that canary is not the reference
    everywhere = torch.full((8,), -INF)  # a reference that is the canary: it passes (equal values)
    canaries = compare.canary_verdicts(compare.Expectation(everywhere, "task", TOL, constant=-INF))
    assert canaries["constant"]


@pytest.mark.parametrize("dtype", FLOAT8)
def test_float8_outputs_are_fingerprinted_and_compared_in_float32(dtype):
    expected = (torch.rand(100) * 3).to(dtype)
    assert fingerprint(expected, 3) == fingerprint(expected.to(torch.float32), 3)
    assert compare.all_finite(expected)
    constant = compare.mean(expected)
    verdict = compared(expected, expected.clone(), constant=constant)
    assert verdict["close_hardened"]
    assert verdict["close_kernelbench"]
    assert identical(verdict["fingerprint"], fingerprint(expected, 7))
    assert compare.canary_verdicts(compare.Expectation(expected, "task", TOL, constant=constant)) == {
        "zeros": False,
        "constant": False,
    }
    wrong = expected.clone()
    wrong[5] = torch.tensor(-2.0).to(dtype)
    assert not compared(expected, wrong)["close_hardened"]


def test_a_complex_tensor_is_fingerprinted_as_its_real_view_on_every_path():
    values = torch.randn(3, 37, dtype=torch.complex64)
    printed = fingerprint(values, 11)
    assert not any(math.isnan(v) for v in printed)
    assert printed == fingerprint(torch.view_as_real(values), 11)
    assert fingerprint(values.conj(), 11) == fingerprint(values.conj().resolve_conj(), 11)
    assert printed[0] != fingerprint(values.conj(), 11)[0]  # the imaginary parts count
    accumulator = Accumulator(real_numel(values), 11, "cpu")
    flat = values.reshape(-1)
    for offset in range(0, flat.numel(), 17):  # chunks in complex elements, as the reference receives them
        accumulator.update(flat[offset : offset + 17], offset)
    assert identical(accumulator.value(), printed)
    doubles = values.to(torch.complex128)
    assert fingerprint(doubles, 11) == fingerprint(torch.view_as_real(doubles), 11)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128, torch.complex32])
def test_complex_outputs_are_compared_element_wise(dtype):
    expected = torch.randn(64, dtype=torch.complex64).to(dtype)
    verdict = compared(expected, expected.clone())
    assert verdict["close_hardened"]
    assert verdict["close_kernelbench"]
    assert verdict["max_abs_error"] == 0.0
    assert identical(verdict["fingerprint"], fingerprint(expected, 7))
    real_only = torch.complex(expected.real, torch.zeros_like(expected.real)).to(dtype)
    verdict = compared(expected, real_only)
    assert not verdict["close_hardened"]
    assert not verdict["close_kernelbench"]
    assert verdict["max_abs_error"] > 0.01


def test_every_torch_dtype_has_its_element_size():
    dtypes = {str(v).removeprefix("torch."): v for v in vars(torch).values() if isinstance(v, torch.dtype)}
    assert {"uint16", "uint32", "uint64", "float8_e4m3fn", "complex32", "complex128"} <= set(dtypes)
    for name, dtype in dtypes.items():
        assert dtype_size(name) == dtype.itemsize, name
    assert dtype_size("float12_new", 3 * 60, 60) == 3  # measured from an output of that dtype
    with pytest.raises(ValueError, match="float12_new"):
        dtype_size("float12_new")


class FakeKernel:
    """The kernel's side of a relay: it announces the chunks it was given."""

    def __init__(self, chunks: list[tuple[int, int, int]]):
        self.messages = [{"event": "chunk", "slot": s, "offset": o, "count": c} for s, o, c in chunks]
        self.messages.append({"event": "sent"})
        self.child = SimpleNamespace(send=lambda message: None)

    def receive(self, limit: float, stage: str) -> dict:
        return self.messages.pop(0)


def relay(shape: list[int], dtype: str, measured: list[int], chunks: list[tuple[int, int, int]]) -> dict:
    """Trials.relay of one trial whose expected output has shape and dtype; the task was sized at measured."""
    problem = Problem(4, 4 * math.prod(measured), measured, "float32", False, 0, 1.0)

    def request(message: dict, event: str, timeout: float, stage: str) -> dict:
        return {"event": event, "slot": message.get("slot"), "complete": True}

    session = SimpleNamespace(
        problem=problem,
        slot_bytes=64,
        slot_count=2,
        talk=SimpleNamespace(request=request),
        timeout=lambda: 10.0,
    )
    trials = Trials(session, FakeKernel(chunks), None, None, 1.0, 1.0, 1.0, 10.0)
    return trials.relay(1, True, {"shape": shape, "dtype": dtype})


def test_the_relay_bounds_chunks_by_the_trials_expected_output():
    # torch.unique: 19 values in this trial, 18 when the task was sized
    assert relay([19], "float32", [18], [(0, 0, 16), (1, 16, 3)])["complete"]
    # uint16: 32 elements fit a slot of 64 bytes (8 would, at the 8 bytes once assumed)
    assert relay([40], "uint16", [40], [(0, 0, 32), (1, 32, 8)])["complete"]
    assert relay([4], "complex128", [4], [(0, 0, 4)])["complete"]
    for shape, dtype, chunks in [
        ([19], "float32", [(0, 0, 16), (1, 16, 4)]),  # past the expected output
        ([5], "complex128", [(0, 0, 5)]),  # 80 bytes: more than a slot holds
    ]:
        with pytest.raises(Stop) as stopped:
            relay(shape, dtype, [18], chunks)
        assert stopped.value.kind == "sandbox_violation"


TASK = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return {expression}


def get_inputs():
    return [torch.rand(8, 16)]


def get_init_inputs():
    return []
"""


def write_pair(folder, expression: str, kernel_expression: str | None = None):
    task, kernel = folder / "task.py", folder / "kernel.py"
    task.write_text(TASK.format(expression=expression))
    body = TASK.format(expression=kernel_expression or expression).replace("class Model(", "class ModelNew(")
    kernel.write_text(body)
    return task, kernel


FAST = ("--baselines", "eager", "--trials", "3")


@pytest.mark.slow
def test_an_all_infinite_output_fails_kernelbench_mode(evaluate, tmp_path):
    task, kernel = write_pair(tmp_path, "torch.relu(x) * 2", 'torch.full_like(x, float("inf"))')
    code, result, output = evaluate(task, kernel, "--mode", "kernelbench", *FAST)
    assert code == 0, output
    assert not result["correct"]
    assert result["error"]["kind"] == "wrong_values"


@pytest.mark.slow
@pytest.mark.parametrize("expression", ["torch.unique(torch.round(x * 4))", "torch.fft.fft(x)"])
def test_an_honest_odd_output_is_correct_in_hardened_mode(evaluate, tmp_path, expression):
    """An output whose size depends on the data, and a complex one."""
    task, kernel = write_pair(tmp_path, expression)
    code, result, output = evaluate(task, kernel, *FAST)
    assert code == 0, output
    assert result["correct"], result.get("error")
    assert not any(flag["code"] == "timed_output_mismatch" for flag in result["flags"])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("expression", "kernel_expression"),
    [
        ("torch.relu(x).t()", "torch.relu(x).t().contiguous()"),
        ("torch.fft.fft(x).t().contiguous()", "torch.fft.fft(x).t()"),
    ],
)
def test_a_transposed_output_is_judged_by_its_values_not_its_layout(
    evaluate, tmp_path, expression, kernel_expression
):
    """The reference's output a view and the kernel's a copy, or the other way round."""
    task, kernel = write_pair(tmp_path, expression, kernel_expression)
    code, result, output = evaluate(task, kernel, *FAST)
    assert code == 0, output
    assert result["correct"], result.get("error")
    assert not [flag["code"] for flag in result["flags"] if flag["severity"] != "info"]
