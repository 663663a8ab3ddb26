"""Null canaries: outputs that compute nothing (zeros, a constant, the input). Passing one: degenerate."""

from __future__ import annotations

from typing import Any

import torch


def canary_outputs(expected: torch.Tensor, inputs: list[Any], constant: float) -> dict[str, torch.Tensor]:
    """The null outputs for one trial; 'input' only where the first tensor input has the output's shape."""
    outputs = {
        "zeros": torch.zeros_like(expected),
        "constant": torch.full_like(expected, constant),
    }
    first = next((value for value in inputs if isinstance(value, torch.Tensor)), None)
    if first is not None and first.shape == expected.shape:
        outputs["input"] = first.to(expected.dtype)
    return outputs


def passes_kernelbench(expected: torch.Tensor, output: torch.Tensor, tolerance: float) -> bool:
    """KernelBench's check: shape, then allclose(reference, output) with atol = rtol = tolerance."""
    return expected.shape == output.shape and bool(
        torch.allclose(expected, output, atol=tolerance, rtol=tolerance)
    )


def null_canaries(
    trials: list, tolerance: float
) -> tuple[list[dict[str, Any]], dict[str, list[torch.Tensor]]]:
    """Run every canary through KernelBench's rule on the task-distribution trials.

    Returns the canary verdicts and, for the canaries that pass, their outputs per trial (so a candidate
    whose outputs are exactly a passing canary can be flagged).
    """
    if not trials or not trials[0].expected.is_floating_point():
        return [], {}
    constant = float(trials[0].expected.mean())
    per_trial = [canary_outputs(trial.expected, trial.inputs, constant) for trial in trials]
    verdicts, passing = [], {}
    for name in ("zeros", "constant", "input"):
        outputs = [canaries.get(name) for canaries in per_trial]
        passed = all(
            output is not None and passes_kernelbench(trial.expected, output, tolerance)
            for trial, output in zip(trials, outputs, strict=True)
        )
        if name == "input" and any(output is None for output in outputs):
            continue
        verdicts.append({"name": name, "passed": passed})
        if passed:
            passing[name] = outputs
    return verdicts, passing
