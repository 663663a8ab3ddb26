"""Comparing fingerprints (pure Python): the harness judges with these, the children use them too.

A fingerprint (evaluator.child.fingerprint) is [sum, sum of |x|, L2 norm, non-finite count, a random
projection, then the values at fixed positions].
"""

from __future__ import annotations

import math

SUMMARY = 5  # sum, |x| sum, L2 norm, non-finite count, projection
# On a GPU, a problem that moves this many bytes (one input set and its output) has its fingerprints taken
# by the one-pass kernel (evaluator.child.fingerprint_gpu), worth compiling once per process from here up;
# the harness tells the reference (EVALUATOR_ONE_PASS_MIB overrides it), which reports whether it did.
ONE_PASS_BYTES = 256 << 20
# The reference process's path to the folder of its cache where it compiles that kernel (a copy of which
# candidates' processes get: evaluator.trusted.settings.one_pass_cache_copy).
ONE_PASS_CACHE_VARIABLE = "EVALUATOR_ONE_PASS_CACHE"


def one_pass_pays(input_bytes: int, output_bytes: int, threshold: int = ONE_PASS_BYTES) -> bool:
    return input_bytes + output_bytes >= threshold


def matches(candidate: list[float], expected: list[float], numel: int, tolerance: float) -> bool:
    """Whether two fingerprints agree within a tolerance scaled to the output's size and magnitude.

    An honest output differs from the reference by at most atol + rtol·|e| per element, so its sums differ
    by at most that times numel, and its projection (unit Gaussian weights) by about the error's L2 norm:
    the bounds are ten times those. An output wrong in a fraction of its elements moves the projection by
    about the norm of its error, whatever the positions of the wrong elements. The sampled values are held
    to the trials' own rule, element by element (an infinity only by itself): a timed call's positions are
    drawn after it returned, so an output near the reference only in its sums fails at most of them. Its L2
    norm must be within a factor of two of the reference's: on a task whose outputs all lie below the
    absolute tolerance, zeros would pass every other check.
    """
    if len(candidate) != len(expected) or any(math.isnan(value) for value in candidate[:SUMMARY]):
        return False
    _total, total_abs, norm, _nonfinite, _projection = expected[:SUMMARY]
    slack = 10 * tolerance
    spread = slack * (math.sqrt(numel) + norm)
    bounds = [slack * (numel + total_abs), slack * (numel + total_abs), spread, 0.5, spread]
    if any(
        not abs(c - e) <= bound
        for c, e, bound in zip(candidate[:SUMMARY], expected[:SUMMARY], bounds, strict=True)
    ):
        return False
    if norm > 0 and not 0.5 * norm <= candidate[2] <= 2 * norm:
        return False  # off in scale: where every value is below the absolute tolerance (zeros on a softmax)
    return all(
        close_value(c, e, tolerance) for c, e in zip(candidate[SUMMARY:], expected[SUMMARY:], strict=True)
    )


def close_value(candidate: float, expected: float, tolerance: float) -> bool:
    """One sampled value against the reference's: within atol + rtol·|e| (both the tolerance), an infinity
    only by the same infinity; where the reference is NaN, anything (the trials judge NaN)."""
    if math.isnan(expected):
        return True
    if math.isinf(expected):
        return candidate == expected
    return abs(candidate - expected) <= tolerance * (1 + abs(expected))


PROJECTION = 4  # its float32 sums depend on the chunks it was taken in, by a little


def identical(first: list[float], second: list[float]) -> bool:
    """Two fingerprints of the same data taken twice (rounding of the sums aside): nothing changed it."""
    if len(first) != len(second):
        return False
    for index, (a, b) in enumerate(zip(first, second, strict=True)):
        if a == b or (math.isnan(a) and math.isnan(b)):
            continue
        scale = 1.0 + abs(a) + abs(b)
        if index == PROJECTION and len(first) > SUMMARY - 1 and not math.isnan(first[2]):
            scale, tolerance = scale + first[2], 1e-4
        else:
            tolerance = 1e-9
        if not abs(a - b) <= tolerance * scale:
            return False
    return True
