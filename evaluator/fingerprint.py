"""Cheap summaries of an output tensor, to check timed calls without shipping their outputs back."""

from __future__ import annotations

import math

import torch

SAMPLE_POINTS = 32


def fingerprint(tensor: torch.Tensor) -> list[float]:
    """[sum, sum of |x|, L2 norm, count of non-finite, then values at fixed pseudo-random positions]."""
    if type(tensor) is not torch.Tensor:
        return [math.nan]
    flat = tensor.detach().reshape(-1)
    if flat.numel() == 0:
        return [0.0, 0.0, 0.0, 0.0]
    if not (flat.is_floating_point() or flat.is_complex()):
        flat = flat.to(torch.float64)
    finite = torch.isfinite(flat)
    clean = torch.where(finite, flat, torch.zeros((), dtype=flat.dtype, device=flat.device))
    positions = sample_positions(flat.numel(), flat.device)
    summary = torch.stack(
        [
            clean.sum(dtype=torch.float64),
            clean.abs().sum(dtype=torch.float64),
            torch.linalg.vector_norm(clean, dtype=torch.float64),
            (~finite).sum().to(torch.float64),
        ]
    )
    return summary.tolist() + flat[positions].to(torch.float64).tolist()


def sample_positions(numel: int, device: torch.device) -> torch.Tensor:
    """The same SAMPLE_POINTS positions on either side of the process boundary."""
    generator = torch.Generator().manual_seed(numel)
    return torch.randint(0, numel, (min(SAMPLE_POINTS, numel),), generator=generator).to(device)


def matches(candidate: list[float], expected: list[float], numel: int, tolerance: float) -> bool:
    """Whether two fingerprints agree within a tolerance scaled to the output's size and magnitude."""
    if len(candidate) != len(expected) or any(math.isnan(value) for value in candidate[:4]):
        return False
    _total, total_abs, norm, _nonfinite = expected[:4]
    slack = 10 * tolerance
    bounds = [
        slack * (numel + total_abs),
        slack * (numel + total_abs),
        slack * (math.sqrt(numel) + norm),
        0.5,
    ]
    if any(abs(c - e) > bound for c, e, bound in zip(candidate[:4], expected[:4], bounds, strict=True)):
        return False
    for c, e in zip(candidate[4:], expected[4:], strict=True):
        if math.isnan(e) or math.isinf(e):
            continue
        if not abs(c - e) <= slack * (1 + abs(e)):
            return False
    return True
