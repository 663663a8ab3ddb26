"""The harness's side of the shared-memory slots: one memory file per kernel, shared by its two children.

Each kernel gets a memory file of its own (two slots of 64 MiB by default), created here and given to its
candidate at start; the task's reference process, which lives longer, receives it over a UNIX socket when
that kernel's turn comes. A kernel's slots therefore never carry another kernel's data, whatever a killed
candidate might have left running.
"""

from __future__ import annotations

import contextlib
import os
import socket
from dataclasses import dataclass

SLOT_COUNT = 2
DEFAULT_SLOT_BYTES = 64 << 20


@dataclass
class SlotFile:
    """A memory file of count slots of slot_bytes; closed by the harness when the kernel is done."""

    fd: int
    slot_bytes: int
    count: int = SLOT_COUNT

    @classmethod
    def create(cls, slot_bytes: int = DEFAULT_SLOT_BYTES, count: int = SLOT_COUNT) -> SlotFile:
        fd = os.memfd_create("kb-slots", os.MFD_CLOEXEC)
        os.ftruncate(fd, slot_bytes * count)
        os.set_inheritable(fd, False)
        return cls(fd, slot_bytes, count)

    def describe(self) -> dict[str, int]:
        return {"slot_bytes": self.slot_bytes, "slot_count": self.count}

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def descriptor_pair() -> tuple[socket.socket, socket.socket]:
    """(harness end, child end) of the socket a reference process receives memory files on."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


def send_file(channel: socket.socket, slots: SlotFile) -> None:
    socket.send_fds(channel, [b"S"], [slots.fd])
