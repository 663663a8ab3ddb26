"""The one-pass fingerprint kernel (run by Triton's interpreter on the CPU) against the torch reductions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.evaluator.conftest import ROOT

COMPARE = textwrap.dedent(
    """
    import json, math, torch
    from evaluator.child import fingerprint as fp, fingerprint_gpu as gpu
    assert not fp.prepare_one_pass("cpu") and fp._one_pass is None  # never on the CPU

    def kernel_sums(accumulator, part, offset):
        weights = fp.projection_weights(accumulator.seed, accumulator.size, accumulator.blocks, "cpu")
        sums = gpu.partial_sums(part, offset, weights, accumulator.size)
        sums[4] /= math.sqrt(2.0)
        return sums

    def printed(values, seed, cuts, sums):
        accumulator = fp.Accumulator(values.numel(), seed, "cpu")
        for start, end in zip([0, *cuts], [*cuts, values.numel()]):
            accumulator.totals += sums(accumulator, values[start:end], start)
        return accumulator.value()

    torch.manual_seed(0)
    rows = []
    for numel, cuts, dtype in [
        (10_000, [3_001, 7_000], torch.float32),
        (fp.BLOCK + 5_000, [4_097, fp.BLOCK - 3], torch.float32),
        (9_000, [4_500], torch.float16),
    ]:
        values = torch.randn(numel).to(dtype)
        values[7], values[100], values[-1] = math.nan, math.inf, -math.inf
        torch_print = printed(values, 3, cuts, lambda a, part, offset: a.torch_sums(part, offset))
        kernel_print = printed(values, 3, cuts, kernel_sums)
        whole = printed(values, 3, [], kernel_sums)
        shifted = printed(values * 1.001, 3, cuts, kernel_sums)
        rows.append({"numel": numel, "torch": torch_print, "kernel": kernel_print, "whole": whole,
                     "shifted": shifted})
    print(json.dumps(rows))
    """
)


def test_the_kernel_agrees_with_the_torch_sums_whatever_the_chunking():
    from evaluator import checks

    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", COMPARE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for row in json.loads(done.stdout):
        assert row["kernel"][3] == 3.0  # the NaN and both infinities counted, not summed
        assert checks.identical(row["kernel"], row["torch"]), row
        assert checks.identical(row["kernel"], row["whole"]), row
        assert not checks.identical(row["kernel"], row["shifted"]), row
