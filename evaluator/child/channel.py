"""The children's side of the shared-memory slots through which a candidate's output reaches the reference.

The harness creates one memory file of a few fixed slots and gives its descriptor to both children: the
candidate copies its output into a free slot chunk by chunk, the reference process copies each chunk to its
device and compares it with its expected output. No output ever lands in a file, and the memory is bounded
by the slots whatever the output's size. Where CUDA can pin the mapping, copies to and from the GPU go at
DMA speed.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import socket

import torch


class Slots:
    """count slots of slot_bytes each in a shared memory file, viewed as torch tensors."""

    def __init__(self, fd: int, slot_bytes: int, count: int, pin: bool):
        self.slot_bytes = slot_bytes
        self.count = count
        self.map = mmap.mmap(fd, slot_bytes * count, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        os.close(fd)  # the mapping keeps the memory
        self.base = torch.frombuffer(self.map, dtype=torch.uint8)
        self.pinned = pin and pin_memory(self.base)

    def close(self) -> None:
        """Unpin and unmap (views of the slots must be gone)."""
        if self.pinned:
            with contextlib.suppress(Exception):
                torch.cuda.cudart().cudaHostUnregister(self.base.data_ptr())
        del self.base
        with contextlib.suppress(BufferError, ValueError):
            self.map.close()

    def view(self, slot: int, count: int, dtype: torch.dtype) -> torch.Tensor:
        """The first count elements of a slot as a flat tensor of dtype."""
        if not 0 <= slot < self.count:
            raise ValueError(f"no slot {slot}")
        size = count * torch.empty((), dtype=dtype).element_size()
        if size > self.slot_bytes:
            raise ValueError(f"{count} elements do not fit in a slot of {self.slot_bytes} bytes")
        start = slot * self.slot_bytes
        return self.base[start : start + size].view(dtype)

    def elements(self, dtype: torch.dtype) -> int:
        """How many elements of dtype one slot holds."""
        return self.slot_bytes // torch.empty((), dtype=dtype).element_size()


def pin_memory(buffer: torch.Tensor) -> bool:
    """Register the mapping with CUDA (page-locked); False where it cannot be (no GPU, no permission)."""
    if not torch.cuda.is_available():
        return False
    with contextlib.suppress(Exception):
        error = torch.cuda.cudart().cudaHostRegister(buffer.data_ptr(), buffer.numel(), 0)
        return int(error) == 0
    return False


def receive_slots(socket_fd: int, slot_bytes: int, count: int) -> Slots:
    """The next kernel's memory file, passed by the harness over the reference's descriptor socket."""
    channel = socket.socket(fileno=socket_fd)
    try:
        _, fds, _, _ = socket.recv_fds(channel, 1, 1)
    finally:
        channel.detach()
    if len(fds) != 1:
        raise ValueError("no memory file came with the slots command")
    return Slots(fds[0], slot_bytes, count, pin=True)


def chunks(numel: int, per_slot: int) -> list[tuple[int, int]]:
    """(offset, count) of the chunks an output of numel elements travels in."""
    step = max(1, per_slot)
    return [(offset, min(step, numel - offset)) for offset in range(0, numel, step)]
