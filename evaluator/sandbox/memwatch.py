"""The host-memory limit where no cgroup enforces one: the harness sums the resident memory of a child's
process tree every few milliseconds and kills the tree's process group when it passes the limit.

A GPU host often has no writable cgroup hierarchy and CUDA forbids an address-space cap, so without this
a kernel could allocate until the kernel's OOM killer picks a process, perhaps the worker's. The watch reads
/proc only (the child's PID namespace does not hide it from the harness) and never signals a process that
is not the child's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from pathlib import Path

logger = logging.getLogger(__name__)

PAGE = os.sysconf("SC_PAGE_SIZE")
INTERVAL_S = 0.05
PROC = Path("/proc")


# /proc/PID/task/TID/children needs CONFIG_PROC_CHILDREN; without it the tree comes from every /proc/PID/stat.
CHILDREN_FILES = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists()


def children_of(pid: int) -> list[int]:
    """The children of every thread of pid, from /proc/PID/task/*/children."""
    found = []
    with contextlib.suppress(OSError):
        for task in (PROC / str(pid) / "task").iterdir():
            with contextlib.suppress(OSError, ValueError):
                found += [int(child) for child in (task / "children").read_text().split()]
    return found


def children_map() -> dict[int, list[int]]:
    """parent pid -> its children, for every process now running, from every /proc/PID/stat (one pass)."""
    found: dict[int, list[int]] = {}
    for entry in os.scandir(PROC):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(entry.path, "stat").read_text()
            found.setdefault(int(stat[stat.rindex(")") + 2 :].split()[1]), []).append(int(entry.name))
    return found


def tree(root: int) -> list[int]:
    """root and all its descendants."""
    known = {} if CHILDREN_FILES else children_map()
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children_of(pid) if CHILDREN_FILES else known.get(pid, ()))
    return found


def resident_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int((PROC / str(pid) / "statm").read_text().split()[1]) * PAGE
    return total


class MemoryWatch(threading.Thread):
    """Kill root's process group once its process tree holds more than limit_bytes of host memory."""

    def __init__(self, root: int, limit_bytes: int, interval_s: float = INTERVAL_S):
        super().__init__(name=f"memory-watch-{root}", daemon=True)
        self.root, self.limit, self.interval = root, limit_bytes, interval_s
        self.stopped = threading.Event()
        self.peak = 0
        self.tripped: int | None = None  # the resident bytes seen when it killed

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            if not os.path.exists(f"/proc/{self.root}"):
                return
            resident = resident_bytes(tree(self.root))
            self.peak = max(self.peak, resident)
            if resident > self.limit:
                self.tripped = resident
                logger.info("child %d holds %d bytes of host memory (limit %d): killed", self.root,
                            resident, self.limit)  # fmt: skip
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.root, signal.SIGKILL)
                return

    def stop(self) -> None:
        self.stopped.set()
