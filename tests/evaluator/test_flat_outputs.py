"""Outputs that are not contiguous are read a range at a time: the same values as a flat copy, and never a
copy of the whole tensor in the fingerprint, the expectation or its canaries."""

import json
import random
import subprocess
import sys

import pytest
import torch

from evaluator.checks import identical
from evaluator.child import compare
from evaluator.child.fingerprint import fingerprint
from evaluator.child.flat import flat_chunks, flat_range
from tests.evaluator.conftest import ROOT


def odd_layouts(count: int):
    """Permuted, strided and broadcast views of random tensors, each with its flat copy."""
    chooser = random.Random(11)
    for _ in range(count):
        shape = [chooser.randint(1, 6) for _ in range(chooser.randint(1, 4))]
        dtype = chooser.choice([torch.float32, torch.int64, torch.complex64, torch.bool])
        base = (torch.randn(*shape) * 5).to(dtype)
        order = list(range(len(shape)))
        chooser.shuffle(order)
        view = base.permute(*order)
        if chooser.random() < 0.3 and view.shape[-1] > 1:
            view = view[..., ::2]
        if chooser.random() < 0.2:
            view = view.unsqueeze(0).expand(3, *view.shape)
        yield view, view.reshape(-1)


def test_every_range_of_any_layout_reads_as_the_flat_copy():
    chooser = random.Random(5)
    for view, flat in odd_layouts(400):
        start = chooser.randint(0, flat.numel())
        stop = chooser.randint(start, flat.numel() + 3)
        assert torch.equal(flat_range(view, start, stop), flat[start:stop]), (view.shape, view.stride())
        step = chooser.randint(1, 9)
        pieces = list(flat_chunks(view, step))
        assert [offset for offset, _ in pieces] == list(range(0, flat.numel(), step))
        assert torch.equal(torch.cat([piece for _, piece in pieces]), flat)


def test_a_contiguous_range_is_a_view_not_a_copy():
    values = torch.arange(24.0).reshape(4, 6)
    piece = flat_range(values, 5, 17)
    assert piece.data_ptr() == values.data_ptr() + 5 * values.element_size()


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64])
def test_a_transposed_output_is_fingerprinted_and_judged_as_its_contiguous_copy(dtype):
    expected = torch.randn(300, 70, dtype=dtype).t()
    copy = expected.contiguous()
    for chunks in (1, 64):
        assert identical(
            fingerprint(expected, 3, block_chunks=chunks), fingerprint(copy, 3, block_chunks=chunks)
        )
    inputs = torch.randn(300, 70, dtype=dtype).t()
    verdicts = [
        compare.canary_verdicts(compare.Expectation(tensor, "task", 1e-4, 0.5, first))
        for tensor, first in ((expected, inputs), (copy, inputs.contiguous()))
    ]
    assert verdicts[0] == verdicts[1]
    comparison = compare.Comparison(compare.Expectation(expected, "task", 1e-4), 7, True)
    flat = copy.reshape(-1)
    comparison.update(flat[:1000], 0)
    comparison.update(flat[1000:], 1000)
    verdict = comparison.verdict()
    assert verdict["complete"]
    assert verdict["close_hardened"]
    assert verdict["max_abs_error"] == 0.0
    assert identical(verdict["fingerprint"], fingerprint(copy, 7))


PROBE = """
import json, resource, torch
from evaluator.child import compare
from evaluator.child.fingerprint import fingerprint

torch.set_num_threads(1)
compare.CHUNK = 1 << 20  # small chunks: a chunk's temporaries are then a few MiB


def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


values = torch.rand(4096, 16384).t()  # 256 MiB, a transposed view
values.add_(0)
growth = {}
start = peak()
fingerprint(values, 5, block_chunks=4)
growth["fingerprint"] = peak() - start
start = peak()
expectation = compare.Expectation(values, "task", 1e-2, 0.5, torch.rand(4096, 16384).t())
compare.canary_verdicts(expectation)
compare.mean(values)
compare.all_finite(values)
growth["expectation"] = peak() - start - 256 * 2**20  # less the input canary the test made
print(json.dumps(growth))
"""


@pytest.mark.slow
def test_no_check_copies_a_whole_transposed_output():
    """The process's peak resident memory grows by a few chunks, not by another output (256 MiB)."""
    completed = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=600, check=True
    )
    growth = json.loads(completed.stdout.strip().splitlines()[-1])
    for stage, grown in growth.items():
        assert grown < 96 * 2**20, f"{stage}: the peak grew by {grown / 2**20:.0f} MiB"
