"""A fingerprint's five sums in one pass over a GPU tensor: a Triton kernel reads each element once.

The torch path (evaluator.child.fingerprint) reads a chunk about fourteen times over in some twenty launches
and needs a float64 copy of it; this kernel loads each element once (the projection weights come from the L2
cache), widens it to float64 in registers and writes one row of partial sums per block of elements. The
partial rows are summed in float64 by torch. The sums agree with the torch path's to rounding, so either
path may fingerprint either side's data. Importing this module imports Triton: a child does it only through
evaluator.child.fingerprint.prepare_one_pass, before any candidate code runs, so the integrity snapshot
covers Triton's modules too.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

ELEMENTS_PER_PROGRAM = 4096
NUM_WARPS = 4  # Triton's default; bench/fingerprint_speed.py --warps compares others
TAKES = (torch.float32, torch.float16, torch.bfloat16)


@triton.jit
def _partial_sums(x_ptr, w_ptr, v_ptr, s_ptr, t_ptr, out_ptr, params_ptr, BLOCK: tl.constexpr):
    """Row pid of out: Σx, Σ|x|, Σx², the non-finite count and Σx·weight over this program's elements
    (non-finite values count as zero in the sums); weight = s[block]·w[i] + t[block]·v[i] for element i of
    projection block `block`, at the element's position in the whole tensor. params holds (count, offset,
    size) as int64, so one compiled kernel serves every size and offset. Per element only 32-bit index
    arithmetic: the program's 64-bit positions are scalars, and its BLOCK elements (BLOCK <= size) reach at
    most into the next projection block, whose two scales are loaded once."""
    pid = tl.program_id(0)
    count = tl.load(params_ptr)
    offset = tl.load(params_ptr + 1)
    size = tl.load(params_ptr + 2)
    start = pid.to(tl.int64) * BLOCK
    lanes = tl.arange(0, BLOCK)
    present = tl.minimum(count - start, BLOCK).to(tl.int32)  # this program's elements, at most BLOCK
    inside = lanes < present
    x = tl.load(x_ptr + start + lanes, mask=inside, other=0.0).to(tl.float32)
    finite = (x == x) & (tl.abs(x) < float("inf"))
    clean = tl.where(finite, x, 0.0).to(tl.float64)
    first = offset + start  # the program's first position in the whole tensor
    first_block = first // size
    first_within = (first - first_block * size).to(tl.int32)
    span = size.to(tl.int32)
    crosses = first_within + present > span  # some element lies in the next projection block
    within = first_within + lanes
    over = within >= span
    within = tl.where(over, within - span, within)
    scale_s = tl.where(
        over, tl.load(s_ptr + first_block + 1, mask=crosses, other=0.0), tl.load(s_ptr + first_block)
    )
    scale_t = tl.where(
        over, tl.load(t_ptr + first_block + 1, mask=crosses, other=0.0), tl.load(t_ptr + first_block)
    )
    weight = scale_s * tl.load(w_ptr + within, mask=inside, other=0.0) + scale_t * tl.load(
        v_ptr + within, mask=inside, other=0.0
    )
    row = out_ptr + pid * 5
    tl.store(row, tl.sum(clean, axis=0))
    tl.store(row + 1, tl.sum(tl.abs(clean), axis=0))
    tl.store(row + 2, tl.sum(clean * clean, axis=0))
    tl.store(row + 3, tl.sum((inside & ~finite).to(tl.float64), axis=0))
    tl.store(row + 4, tl.sum(clean * weight.to(tl.float64), axis=0))


def takes(chunk: torch.Tensor) -> bool:
    """Whether this kernel reads the chunk exactly: a contiguous tensor of a float type up to 32 bits."""
    return chunk.dtype in TAKES and chunk.is_contiguous()


def partial_sums(
    chunk: torch.Tensor, offset: int, weights: tuple[torch.Tensor, ...], size: int
) -> torch.Tensor:
    """[Σx, Σ|x|, Σx², non-finite count, Σx·weight] of a flat chunk starting at `offset`, float64, on its
    device (the projection not yet divided by √2)."""
    w, v, s, t = weights
    if size < ELEMENTS_PER_PROGRAM:  # a program's elements must span at most two projection blocks
        raise ValueError(f"projection blocks of {size} elements are shorter than a program's")
    count = chunk.numel()
    programs = -(-count // ELEMENTS_PER_PROGRAM)
    rows = torch.empty((programs, 5), dtype=torch.float64, device=chunk.device)
    params = torch.tensor([count, offset, size], dtype=torch.int64).to(chunk.device)
    _partial_sums[(programs,)](
        chunk, w, v, s, t, rows, params, BLOCK=ELEMENTS_PER_PROGRAM, num_warps=NUM_WARPS
    )
    return rows.sum(dim=0)
