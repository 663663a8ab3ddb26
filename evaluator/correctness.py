"""The trusted comparison of a candidate's outputs with the expected ones, trial by trial."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import torch

from evaluator.policy import Policy
from evaluator.reference import TrialCase
from evaluator.result import Trial


@dataclass
class TrialVerdict:
    trial: Trial
    error_kind: str | None = None
    message: str = ""


def load_outputs(path: Path | BinaryIO, count: int) -> list[Any]:
    """Outputs saved by the child, loaded with weights_only (no arbitrary classes, no tensor subclasses)."""
    outputs = torch.load(path, weights_only=True, map_location="cpu")
    if not isinstance(outputs, list) or len(outputs) != count:
        raise ValueError(f"expected a list of {count} outputs")
    return outputs


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def error_sizes(
    expected: torch.Tensor, output: torch.Tensor, atol: float
) -> tuple[float | None, float | None]:
    """Max absolute error, and max of |error| / (|expected| + atol); None when not finite."""
    if expected.numel() == 0:
        return 0.0, 0.0
    diff = (output.to(torch.float64) - expected.to(torch.float64)).abs()
    relative = diff / (expected.to(torch.float64).abs() + atol)
    return _finite_or_none(float(diff.max())), _finite_or_none(float(relative.max()))


def check_structure(expected: torch.Tensor, output: Any, report: dict[str, Any], policy: Policy):
    """The error kind and message for an output of the wrong kind, or None when its structure is right."""
    if output is None or not report.get("exact_tensor") or type(output) is not torch.Tensor:
        return (
            "not_a_tensor",
            f"forward returned {report.get('type', type(output).__name__)}, not a torch.Tensor",
        )
    if policy.check_inputs and report.get("mutated"):
        return "mutated_input", "forward changed its input tensors"
    if policy.check_inputs and report.get("aliases"):
        return "aliases_input", "the output shares storage with an input"
    if report.get("device") != policy.device:
        return "wrong_device", f"output on {report.get('device')}, expected {policy.device}"
    if output.shape != expected.shape:
        return "wrong_shape", f"output shape {tuple(output.shape)}, expected {tuple(expected.shape)}"
    if output.dtype != expected.dtype:
        return "wrong_dtype", f"output dtype {output.dtype}, expected {expected.dtype}"
    return None


def values_match(expected: torch.Tensor, output: torch.Tensor, policy: Policy, distribution: str) -> bool:
    """KernelBench's allclose in compatibility mode; hardened: relative to the reference, NaN where it is."""
    tol = policy.tolerance
    if policy.mode == "kernelbench":
        return bool(torch.allclose(expected, output, atol=tol, rtol=tol))
    atol = tol
    if distribution != "task" and expected.numel():
        # Signed and heavy-tailed inputs give large magnitudes; absolute error scales with them.
        atol = tol * max(1.0, float(expected.abs().max()))
    return bool(torch.allclose(output, expected, atol=atol, rtol=tol, equal_nan=True))


def compare_trial(case: TrialCase, output: Any, report: dict[str, Any], policy: Policy) -> TrialVerdict:
    trial = Trial(case.seed, case.distribution, case.order, passed=False)
    problem = check_structure(case.expected, output, report, policy)
    if problem:
        return TrialVerdict(trial, *problem)
    with torch.no_grad():
        return compare_values(case, trial, output.to(policy.device), policy)


def compare_values(case: TrialCase, trial: Trial, output: torch.Tensor, policy: Policy) -> TrialVerdict:
    """Errors, NaN/Inf and the tolerance check, on the policy's device (fast for large outputs)."""
    expected = case.expected.to(policy.device)
    trial.max_abs_error, trial.max_rel_error = error_sizes(expected, output, policy.tolerance)
    if policy.check_inputs and output.is_floating_point():
        new_nonfinite = ~torch.isfinite(output) & torch.isfinite(expected)
        if bool(new_nonfinite.any()):
            return TrialVerdict(
                trial, "nan_inf", f"{int(new_nonfinite.sum())} NaN/Inf values where the reference has none"
            )
    if not values_match(expected, output, policy, case.distribution):
        detail = f"max abs error {trial.max_abs_error}, max rel error {trial.max_rel_error}"
        return TrialVerdict(
            trial, "wrong_values", f"values differ (seed {case.seed}, {case.distribution}): {detail}"
        )
    trial.passed = True
    return TrialVerdict(trial)


def compare_all(
    cases: list[TrialCase], outputs: list[Any], reports: list[dict[str, Any]], policy: Policy
) -> list[TrialVerdict]:
    return [
        compare_trial(case, output, report, policy)
        for case, output, report in zip(cases, outputs, reports, strict=True)
    ]
