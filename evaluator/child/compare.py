"""In the reference process: a candidate's output against the expected one, chunk by chunk, on the device.

The expected output never leaves the reference process. Every statistic the verdict needs is a running
one (maxima, counts, all-close flags, a fingerprint), so an output of any size is judged with the memory
of one chunk. KernelBench's rule (allclose(expected, output), NaN never close) and the hardened rule
(relative to the reference, NaN where the reference has NaN, the absolute tolerance scaled by the output's
magnitude on signed and heavy-tailed inputs) are both kept, and so are the distances to the null canaries
(zeros, one constant, the input) that the harness needs to recognise an output computing nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from evaluator.child.fingerprint import Accumulator, real_numel, widened
from evaluator.child.flat import flat_chunks, flat_range

CANARIES = ("zeros", "constant", "input")
CHUNK = 1 << 24  # elements per step of the reference's own whole-tensor checks
STEP = 1 << 22  # elements per step of a comparison


@dataclass
class Expectation:
    """One trial's expected output, what its tolerance depends on, and the canaries it is checked against."""

    expected: torch.Tensor
    distribution: str
    tolerance: float
    constant: float | None = None  # the constant canary: the mean of the first KernelBench trial's output
    first_input: torch.Tensor | None = None  # the input canary, when it has the output's shape
    abs_max: float = 0.0

    def __post_init__(self):
        if self.expected.numel() and numeric(self.expected):
            self.abs_max = max(finite_abs_max(chunk) for chunk in chunks_of(self.expected))

    @property
    def hardened_atol(self) -> float:
        """Signed and heavy-tailed inputs give large magnitudes; absolute error scales with them."""
        if self.distribution == "task":
            return self.tolerance
        return self.tolerance * max(1.0, self.abs_max)

    def piece(self, offset: int, count: int) -> torch.Tensor:
        """Expected elements [offset, offset + count), widened where torch cannot compute on their type."""
        return widened(flat_range(self.expected, offset, offset + count))

    def canary(self, name: str, offset: int, count: int) -> torch.Tensor | None:
        piece = self.piece(offset, count)
        if name == "zeros":
            return torch.zeros_like(piece)
        if name == "constant" and self.constant is not None:
            return torch.full_like(piece, self.constant)
        if name == "input" and self.first_input is not None:
            return flat_range(self.first_input, offset, offset + count).to(piece.dtype)
        return None


def numeric(values: torch.Tensor) -> bool:
    """Floating point or complex: compared with a tolerance (other types must be equal)."""
    return values.is_floating_point() or values.is_complex()


def chunks_of(values: torch.Tensor):
    """Flat chunks of CHUNK elements of a tensor of any layout (widened where torch cannot compute on their
    type: float8): whole-tensor checks with one chunk's temporaries."""
    return (widened(chunk) for _, chunk in flat_chunks(values, CHUNK))


def mean(values: torch.Tensor) -> float:
    """The mean in float64, summed chunk by chunk (a float64 copy of a whole output would double it)."""
    total = sum(float(chunk.sum(dtype=torch.float64)) for chunk in chunks_of(values))
    return total / values.numel() if values.numel() else math.nan


def all_finite(values: torch.Tensor) -> bool:
    return all(bool(torch.isfinite(chunk).all()) for chunk in chunks_of(values))


def finite_abs_max(values: torch.Tensor) -> float:
    """The largest magnitude of the finite values (of a complex one's finite parts)."""
    clean = torch.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
    return float((clean.abs() if clean.is_complex() else clean.abs_()).max())


def within(difference: torch.Tensor, bound: torch.Tensor, same: torch.Tensor) -> torch.Tensor:
    """torch.isclose's rule: a finite difference within the bound, or the same value. Where an infinity is
    involved the difference is not finite (inf, or NaN for the same infinity), and the bound may be
    infinite too: only `same` (equal infinities) can pass there."""
    return torch.isfinite(difference).logical_and_(difference <= bound).logical_or_(same)


def kernelbench_close(expected: torch.Tensor, output: torch.Tensor, tolerance: float) -> bool:
    """torch.allclose(expected, output, atol=rtol=tolerance): |e - o| finite and <= tol + tol·|o|, or
    e == o (the same infinity); NaN never."""
    expected, output = widened(expected), widened(output)
    bound = output.abs().mul_(tolerance).add_(tolerance)
    return bool(within((expected - output).abs(), bound, expected == output).all())


def canary_verdicts(expectation: Expectation) -> dict[str, bool]:
    """Which null canaries pass this trial under KernelBench's rule (computed in chunks)."""
    verdicts = {}
    numel = expectation.expected.numel()
    for name in CANARIES:
        passed = True
        for offset in range(0, numel, CHUNK):
            count = min(CHUNK, numel - offset)
            canary = expectation.canary(name, offset, count)
            if canary is None:
                passed = None
                break
            passed = passed and kernelbench_close(
                expectation.piece(offset, count), canary, expectation.tolerance
            )
        if passed is not None:
            verdicts[name] = bool(passed)
    return verdicts


def equal_to(expectation: Expectation, name: str) -> bool:
    """Whether the expected output is exactly the canary (then matching the canary is no evidence)."""
    numel = expectation.expected.numel()
    for offset in range(0, numel, CHUNK):
        count = min(CHUNK, numel - offset)
        canary = expectation.canary(name, offset, count)
        if canary is None or not torch.equal(expectation.piece(offset, count), canary):
            return False
    return True


@dataclass
class CanaryDistance:
    equal: bool = True
    close: bool = True  # KernelBench's rule with the canary as the expected output
    distance: float = 0.0  # max |output - canary|


@dataclass
class Comparison:
    """Running statistics of one candidate output against one expectation."""

    expectation: Expectation
    fingerprint_seed: int
    with_canaries: bool
    max_abs: float = 0.0
    max_rel: float = 0.0
    not_finite_difference: bool = False
    close_hardened: bool = True
    close_kernelbench: bool = True
    new_nonfinite: int = 0
    received: int = 0
    canaries: dict[str, CanaryDistance] = field(default_factory=dict)

    def __post_init__(self):
        expected = self.expectation.expected
        self.accumulator = Accumulator(real_numel(expected), self.fingerprint_seed, expected.device)

    def update(self, chunk: torch.Tensor, offset: int) -> None:
        """Compare output elements [offset, offset + chunk.numel()) with the expected ones."""
        count = chunk.numel()
        if offset != self.received or offset + count > self.expectation.expected.numel():
            raise ValueError(f"chunk at {offset} of {count} elements is out of order or out of range")
        self.received += count
        self.accumulator.update(chunk, offset)
        for start in range(0, count, STEP):  # a few temporaries of STEP elements at a time
            self.step(chunk[start : start + STEP], offset + start)

    def step(self, chunk: torch.Tensor, offset: int) -> None:
        expected = self.expectation.piece(offset, chunk.numel())
        if not numeric(expected):
            self.integer_update(expected, chunk)
            return
        chunk, tol = widened(chunk), self.expectation.tolerance
        diff = (chunk - expected).abs()  # in the output's dtype, as torch.allclose computes it (complex: |z|)
        if not bool(torch.isfinite(diff).all()):
            self.not_finite_difference = True  # the errors are then reported as not finite (None)
        else:
            self.max_abs = max(self.max_abs, float(diff.max()))
            self.max_rel = max(self.max_rel, float((diff / (expected.abs() + tol)).max()))
        equal = chunk == expected
        same = torch.isnan(chunk).logical_and_(torch.isnan(expected)).logical_or_(equal)
        bound = expected.abs().mul_(tol).add_(self.expectation.hardened_atol)
        self.close_hardened &= bool(within(diff, bound, same).all())
        kernelbench_bound = chunk.abs().mul_(tol).add_(tol)
        self.close_kernelbench &= bool(within(diff, kernelbench_bound, equal).all())
        del diff, same, equal, bound, kernelbench_bound
        self.new_nonfinite += int((~torch.isfinite(chunk) & torch.isfinite(expected)).sum())
        if self.with_canaries:
            self.canary_update(chunk, offset)

    def integer_update(self, expected: torch.Tensor, chunk: torch.Tensor) -> None:
        equal = bool(torch.equal(expected, chunk))
        self.close_hardened &= equal
        self.close_kernelbench &= equal
        if not equal:
            diff = (chunk.to(torch.float64) - expected.to(torch.float64)).abs()
            self.max_abs = max(self.max_abs, float(diff.max()))
            self.max_rel = max(self.max_rel, float((diff / (expected.to(torch.float64).abs() + 1)).max()))

    def canary_update(self, chunk: torch.Tensor, offset: int) -> None:
        for name in CANARIES:
            canary = self.expectation.canary(name, offset, chunk.numel())
            if canary is None:
                continue
            state = self.canaries.setdefault(name, CanaryDistance())
            state.equal &= bool(torch.equal(widened(chunk), canary))
            state.close &= kernelbench_close(canary, chunk, self.expectation.tolerance)
            difference = torch.nan_to_num((chunk - canary).abs(), nan=math.inf)
            state.distance = max(state.distance, float(difference.max()))

    def verdict(self) -> dict[str, Any]:
        """The statistics as JSON (None for errors that are not finite)."""
        complete = self.received == self.expectation.expected.numel()
        finite = not self.not_finite_difference
        return {
            "complete": complete,
            "max_abs_error": reported(self.max_abs, finite),
            "max_rel_error": reported(self.max_rel, finite),
            "close_hardened": complete and self.close_hardened,
            "close_kernelbench": complete and self.close_kernelbench,
            "new_nonfinite": self.new_nonfinite,
            "fingerprint": self.accumulator.value(),
            "canaries": {
                name: {"equal": state.equal, "close": state.close, "distance": state.distance}
                for name, state in self.canaries.items()
            },
        }


def reported(error: float, finite: bool) -> float | None:
    """An error statistic as JSON: None where a difference was not finite, or where the statistic itself is
    not (a finite difference of 3e38 over a denominator of 1e-4 overflows float32 to infinity)."""
    return error if finite and math.isfinite(error) else None
