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


EXACT = textwrap.dedent(
    """
    import json, torch
    from evaluator.child import fingerprint_gpu as gpu

    torch.manual_seed(1)
    size, blocks = 5_000, 4  # projection blocks a program's 4,096 elements straddle
    w, v = torch.randn(size), torch.randn(size)
    s, t = torch.randn(blocks), torch.randn(blocks)
    values = torch.randn(size * blocks)
    rows = []
    for offset, end in [(0, 20_000), (4_999, 15_001), (9_999, 20_000), (123, 9_123)]:
        chunk = values[offset:end]
        position = torch.arange(offset, end)
        block, within = position // size, position % size
        weight = (s[block] * w[within] + t[block] * v[within]).double()  # fp32 weights, as the kernel's
        expected = (chunk.double() * weight).sum().item()
        got = gpu.partial_sums(chunk, offset, (w, v, s, t), size)[4].item()
        rows.append([offset, expected, got])
    print(json.dumps(rows))
    """
)


def test_every_element_is_weighted_by_its_own_projection_block():
    """Chunks that start anywhere: a program's elements may cross into the next projection block, and
    each must take that block's weights (one wrong element moves the sum far beyond float64 rounding)."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", EXACT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for offset, expected, got in json.loads(done.stdout):
        assert abs(got - expected) <= 1e-9 * (1 + abs(expected)) * 100, (offset, expected, got)


WARM = textwrap.dedent(
    """
    import json
    from evaluator.child import fingerprint as fp

    key = fp.triton_key_function()
    before = key.cache_info().currsize
    warmed = fp.warm_triton()
    print(json.dumps([before, warmed, key.cache_info().currsize, key.cache_info().hits]))
    key()  # what Triton's first launch asks for: already there
    print(json.dumps([key.cache_info().hits]))
    """
)


def test_a_booting_process_computes_tritons_installation_key_ahead_of_its_first_launch():
    done = subprocess.run([sys.executable, "-c", WARM], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = (json.loads(line) for line in done.stdout.splitlines()[-2:])
    assert first == [0, True, 1, 0]  # computed once, by the warm-up
    assert second == [1]  # the launch's own call finds it


def test_without_triton_the_warm_up_does_nothing(monkeypatch):
    from evaluator.child import fingerprint as fp

    def missing(name):
        raise ModuleNotFoundError(name)

    monkeypatch.setattr(fp.importlib, "import_module", missing)
    assert fp.triton_key_function() is None
    assert fp.warm_triton() is False
