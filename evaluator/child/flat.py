"""A tensor's elements in row-major order, a range at a time: a view where the tensor is contiguous, else a
copy of that range alone, never of the whole tensor.

An output need not be contiguous (scaled dot-product attention returns a transposed view of its buffer), and
`reshape(-1)` of such a tensor copies all of it: on a 2 GiB output, 2 GiB more in both children at once.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch


def flat_range(tensor: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Elements [start, stop) of tensor as one flat tensor (a view of a contiguous one)."""
    stop = min(stop, tensor.numel())
    if start >= stop:
        return tensor.new_empty(0)
    pieces = list(pieces_of(tensor, start, stop))
    return pieces[0] if len(pieces) == 1 else torch.cat(pieces)


def pieces_of(tensor: torch.Tensor, start: int, stop: int) -> Iterator[torch.Tensor]:
    """Flat pieces that together hold elements [start, stop): whole rows of the leading dimension at
    once, a partial row at either end from within that row."""
    if tensor.dim() == 0 or tensor.is_contiguous():
        yield tensor.reshape(-1)[start:stop]
        return
    row = tensor.numel() // tensor.shape[0]
    first, last = divmod(start, row), divmod(stop, row)
    if first[0] == last[0]:  # within one row
        yield from pieces_of(tensor[first[0]], first[1], last[1])
        return
    whole_from = first[0]
    if first[1]:
        yield from pieces_of(tensor[first[0]], first[1], row)
        whole_from += 1
    if last[0] > whole_from:
        yield tensor[whole_from : last[0]].reshape(-1)
    if last[1]:
        yield from pieces_of(tensor[last[0]], 0, last[1])


def flat_chunks(tensor: torch.Tensor, step: int) -> Iterator[tuple[int, torch.Tensor]]:
    """(offset, elements [offset, offset + step)) over the whole tensor, in order."""
    for offset in range(0, tensor.numel(), max(1, step)):
        yield offset, flat_range(tensor, offset, offset + step)
