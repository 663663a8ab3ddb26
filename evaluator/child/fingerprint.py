"""Cheap summaries of a tensor, computed in blocks, to check outputs without shipping them between processes.

A fingerprint is [sum, sum of |x|, sum of x², non-finite count, a random projection, then the values at
32 positions]. The projection's weights and the positions come from a seed the harness picks per round,
so a kernel cannot know in advance which functional of its output is checked; both are generated block by
block, so a fingerprint computed over the whole tensor and one accumulated chunk by chunk (as the
reference process receives an output) agree. The running totals stay on the tensor's device until the
value is read: one host synchronisation per fingerprint, however many chunks (the one-pass kernel adds a
short wait per chunk, copying its three int64 parameters to the device). In a child that prepared it (a
large GPU problem: evaluator.checks.one_pass_pays; the reference decides and the candidate follows), the
five sums of a large CUDA chunk take one pass (evaluator.child.fingerprint_gpu); otherwise a few torch
reductions per chunk. Comparing them is evaluator.checks (pure Python).
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import importlib
import logging
import math
import os
from typing import Any

import torch

from evaluator.checks import SUMMARY, identical, matches
from evaluator.child.flat import flat_chunks

logger = logging.getLogger(__name__)
__all__ = ["Accumulator", "fingerprint", "identical", "matches", "prepare_one_pass"]

SAMPLE_POINTS = 32
# Elements per block of projection weights: each weight vector is 1 MiB of float32, so it comes from PyTorch's
# small-block pool (never carved out of a freed output-sized block, which the next output then could not
# reuse) and stays in the GPU's L2 cache while the one-pass kernel streams the data past it.
BLOCK = 1 << 18
TORCH_PATH_BLOCKS = 64  # blocks per chunk of the torch path: its float64 copy is 128 MiB at most
ONE_PASS_ELEMENTS = 1 << 20  # smaller chunks keep the torch path: a handful of launches
# Types most reductions and arithmetic are not implemented for, and the type that holds them exactly.
WIDER = {
    getattr(torch, name): wide
    for name, wide in (
        ("float8_e4m3fn", torch.float32),
        ("float8_e5m2", torch.float32),
        ("float8_e4m3fnuz", torch.float32),
        ("float8_e5m2fnuz", torch.float32),
        ("float8_e8m0fnu", torch.float32),
        ("complex32", torch.complex64),
    )
    if hasattr(torch, name)
}
_one_pass: Any = None  # evaluator.child.fingerprint_gpu, once prepare_one_pass() has run


def prepare_one_pass(device: str, cache_dir: str | None = None) -> bool:
    """Import and compile the one-pass kernel now, before candidate code runs; False where it cannot.

    With cache_dir (the reference process's, a folder of the worker's cache no candidate can reach) Triton
    compiles it there, so the harness can give candidates' processes a copy and spare them the compile.
    """
    global _one_pass
    if device != "cuda" or _one_pass is not None:
        return _one_pass is not None
    try:
        from evaluator.child import fingerprint_gpu
    except ImportError:  # no Triton: the torch path everywhere
        return False
    _one_pass = fingerprint_gpu
    try:
        with triton_cache(cache_dir):
            fingerprint(torch.zeros(ONE_PASS_ELEMENTS, device="cuda"), 0)  # compiled now, not when timed
    except Exception:  # noqa: BLE001 - a kernel Triton cannot build here: the torch path, as in the other child
        logger.exception("the one-pass fingerprint kernel does not run here; torch reductions instead")
        _one_pass = None
    return _one_pass is not None


def triton_key_function() -> Any:
    """Triton's function hashing its own installation (it moved between releases), or None without it."""
    for name in ("triton.runtime.cache", "triton.compiler.compiler"):
        try:
            key = getattr(importlib.import_module(name), "triton_key", None)
        except ImportError:  # no Triton, or not this module in this release
            continue
        if callable(key):
            return key
    return None


def warm_triton() -> bool:
    """Triton's hash of its own installation, computed now: its first kernel launch in a process computes it
    even when the kernel is in the cache (hashing a library of some 500 MB: about 0.35 s on the development
    machine). CPU work alone, so a process started ahead of its turn does it while another kernel runs;
    where Triton or the function is missing, nothing."""
    key = triton_key_function()
    if key is None:
        return False
    try:
        key()
    except Exception:  # noqa: BLE001 - a warm-up only: the launch computes it again if it must
        logger.exception("Triton's installation key could not be computed ahead")
        return False
    return True


@contextlib.contextmanager
def triton_cache(folder: str | None):
    """Triton's compile cache in folder for what runs inside (TRITON_CACHE_DIR is read at each compile)."""
    if not folder:
        yield
        return
    before = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = folder
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = before


def widened(values: torch.Tensor) -> torch.Tensor:
    """float8 as float32 and complex32 as complex64 (exactly): the others unchanged."""
    wide = WIDER.get(values.dtype)
    return values if wide is None else values.to(wide)


def real_view(values: torch.Tensor) -> torch.Tensor:
    """A complex tensor as its real view (real and imaginary parts side by side: a view, unless its
    conjugate bit needs a copy); any other as it is."""
    return torch.view_as_real(values.resolve_conj()) if values.is_complex() else values


def real_values(values: torch.Tensor) -> torch.Tensor:
    """What a fingerprint reads of a chunk, flat: a complex one as its real view (twice as many values)."""
    return real_view(values).reshape(-1)


def real_numel(values: torch.Tensor) -> int:
    """How many values real_values gives: the numel an Accumulator of this tensor's chunks needs."""
    return values.numel() * (2 if values.is_complex() else 1)


def one_pass(chunk: torch.Tensor) -> bool:
    return (
        _one_pass is not None
        and chunk.is_cuda
        and chunk.numel() >= ONE_PASS_ELEMENTS
        and _one_pass.takes(chunk)
    )


def sample_positions(numel: int, seed: int) -> list[int]:
    """The same SAMPLE_POINTS positions on either side of the process boundary."""
    if numel <= 0:
        return []
    generator = torch.Generator().manual_seed((seed * 1_000_003 + numel) % (2**63))
    count = min(SAMPLE_POINTS, numel)
    return sorted(torch.randint(0, numel, (count,), generator=generator).tolist())


@functools.lru_cache(maxsize=2)
def projection_weights(seed: int, size: int, blocks: int, device: str) -> tuple[torch.Tensor, ...]:
    """Two blocks of unit Gaussian weights (w, v) and two per-block scales (s, t) for a seed (cached: a
    round's calls share them)."""
    generator = torch.Generator(device=device).manual_seed((seed * 7_919 + size) % (2**63))
    w, v = (torch.randn(size, generator=generator, device=device) for _ in range(2))
    s, t = (torch.randn(blocks, generator=generator, device=device) for _ in range(2))
    return w, v, s, t


class Accumulator:
    """A fingerprint built from consecutive flat chunks of any size.

    The projection weighs element i of block j (blocks are min(BLOCK, numel) long) with
    (s_j·w_i + t_j·v_i) / √2: every weight is unit Gaussian, the weights differ from block to block, and the
    sum over whole blocks is two matrix-vector products. Both sides, knowing numel and the seed, use the
    same weights whatever chunks they see. A complex tensor is fingerprinted as its real view: numel counts
    its real values (real_numel), while update takes complex chunks and offsets in complex elements.
    """

    def __init__(self, numel: int, seed: int, device: str | torch.device):
        self.numel = numel
        self.seed = seed
        self.device = torch.device(device)
        self.size = max(1, min(BLOCK, numel))
        self.blocks = -(-max(numel, 1) // self.size)
        self.totals = torch.zeros(SUMMARY, dtype=torch.float64, device=self.device)
        self.positions = sample_positions(numel, seed)  # sorted
        self.index = torch.tensor(self.positions, dtype=torch.int64, device=self.device)
        self.points = torch.full((len(self.positions),), math.nan, dtype=torch.float64, device=self.device)

    def projection(self, clean: torch.Tensor, offset: int) -> torch.Tensor:
        """Σ x·weight over the chunk (float64, on the device): partial blocks at either end by dot products,
        whole ones at once; each piece is summed in fp32, the pieces in fp64."""
        w, v, s, t = projection_weights(self.seed, self.size, self.blocks, str(self.device))
        pieces, position, end = [], offset, offset + clean.numel()
        while position < end:
            block, low = divmod(position, self.size)
            whole = (end - position) // self.size if low == 0 else 0
            if whole:
                rows = clean[position - offset : position - offset + whole * self.size].view(whole, self.size)
                pieces.append(
                    w @ (rows.t() @ s[block : block + whole]) + v @ (rows.t() @ t[block : block + whole])
                )
                position += whole * self.size
                continue
            high = min(self.size, low + end - position, self.numel - block * self.size)
            part = clean[position - offset : position - offset + high - low]
            pieces.append(s[block] * (part @ w[low:high]) + t[block] * (part @ v[low:high]))
            position += high - low
        return torch.stack(pieces).to(torch.float64).sum() / math.sqrt(2.0)

    def update(self, chunk: torch.Tensor, offset: int) -> None:
        """Add the flat chunk holding elements [offset, offset + chunk.numel())."""
        if chunk.is_complex():
            offset *= 2  # its real view: two values an element
        values = widened(real_values(chunk))  # float8 widened chunk by chunk
        count = values.numel()
        if count == 0:
            return
        values = values if values.is_floating_point() else values.to(torch.float64)
        if one_pass(values):
            weights = projection_weights(self.seed, self.size, self.blocks, str(self.device))
            stats = _one_pass.partial_sums(values, offset, weights, self.size)
            stats[4] /= math.sqrt(2.0)
        else:
            stats = self.torch_sums(values, offset)
        self.totals += stats.to(self.device)
        first = bisect.bisect_left(self.positions, offset)
        last = bisect.bisect_left(self.positions, offset + count)
        if last > first:
            self.points[first:last] = values[self.index[first:last] - offset].to(torch.float64)

    def torch_sums(self, values: torch.Tensor, offset: int) -> torch.Tensor:
        """The five sums of a chunk with torch reductions (CPU tensors, float64, integers, no Triton)."""
        count = values.numel()
        clean = torch.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
        # One float64 copy for the three sums (a reduction asked for a wider dtype than its input's makes a
        # copy of its own each time), and the non-finite values counted without a sum over an int64 copy.
        wide = clean.to(torch.float64)
        return torch.stack(
            [
                wide.sum(),
                torch.linalg.vector_norm(wide, 1),
                torch.linalg.vector_norm(wide).square(),
                count - torch.count_nonzero(torch.isfinite(values)).to(torch.float64),
                self.projection(clean.to(torch.float32), offset),
            ]
        )

    def value(self) -> list[float]:
        """The fingerprint as plain floats (the one point where the host waits for the device)."""
        read = torch.cat([self.totals, self.points]).tolist()
        total, absolute, squares, nonfinite, projection = read[:SUMMARY]
        summary = [total, absolute, math.sqrt(max(squares, 0.0)), nonfinite, projection]
        return summary + read[SUMMARY:]


def input_prints(values: list[object], seed: int) -> list[list[float]]:
    """The fingerprint of every tensor of an input set, in order."""
    return [fingerprint(value, seed) for value in values if isinstance(value, torch.Tensor)]


def fingerprint(tensor: object, seed: int, block_chunks: int = TORCH_PATH_BLOCKS) -> list[float]:
    """The fingerprint of a whole tensor (a complex one: its real view); [nan] for anything that is not an
    exact dense tensor."""
    if type(tensor) is not torch.Tensor or tensor.layout != torch.strided:
        return [math.nan]
    values = real_view(tensor.detach())
    accumulator = Accumulator(values.numel(), seed, values.device)
    # The torch path's float64 copy is bounded by its chunk; the one-pass kernel needs no copy at all of a
    # contiguous tensor, and of any other a chunk's at a time (evaluator.child.flat).
    whole = values.is_contiguous() and one_pass(values.reshape(-1))
    step = max(1, values.numel()) if whole else BLOCK * block_chunks
    for offset, chunk in flat_chunks(values, step):
        accumulator.update(chunk, offset)
    return accumulator.value()
