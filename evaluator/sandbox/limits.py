"""Resource limits of one sandboxed child, sized for the device and the task."""

from __future__ import annotations

import os
from dataclasses import dataclass

MiB, GiB = 1 << 20, 1 << 30


@dataclass(frozen=True)
class Limits:
    """Resource limits for one child. Address space is capped on CPU only (CUDA reserves huge ranges)."""

    cpu_seconds: int = 1200
    file_bytes: int = 16 * GiB
    open_files: int = 4096
    processes: int | None = None
    address_space: int | None = None
    memory_bytes: int = 64 * GiB  # host memory, through a cgroup where the host has one
    max_tasks: int = 4096  # processes and threads, through a cgroup (and RLIMIT_NPROC for its own user)
    temp_dir_bytes: int = 4 * GiB  # the temp dir, a tmpfs where the harness can mount one
    tmp_bytes: int = 1 * GiB  # its private /tmp and /dev/shm

    def rlimits(self) -> dict[str, int | None]:
        return {
            "RLIMIT_CPU": self.cpu_seconds,
            "RLIMIT_FSIZE": self.file_bytes,
            "RLIMIT_NOFILE": self.open_files,
            "RLIMIT_NPROC": self.processes,
            "RLIMIT_AS": self.address_space,
            "RLIMIT_CORE": 0,
        }


def total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 64 * GiB


def default_limits(
    device: str,
    memory_limit_mb: int | None = None,
    max_tasks: int | None = None,
    temp_dir_mb: int | None = None,
) -> Limits:
    """Limits sized for the device: no address-space cap with CUDA; the keyword arguments override.

    No tensor ever goes through a file (inputs come from seeds, outputs through shared slots), so the temp
    dir holds only builds, caches and logs whatever the task's size.
    """
    processes = None
    if os.geteuid() != 0:  # NPROC counts the user's processes and threads; root ignores it anyway
        processes = 4096 + len(os.listdir("/proc"))
    memory = memory_limit_mb * MiB if memory_limit_mb else min(64 * GiB, total_memory() * 3 // 4)
    return Limits(
        file_bytes=4 * GiB,
        processes=processes,
        address_space=None if device == "cuda" else 64 * GiB,
        memory_bytes=memory,
        max_tasks=max_tasks or max(4096, 64 * (os.cpu_count() or 1)),
        temp_dir_bytes=temp_dir_mb * MiB if temp_dir_mb else 2 * GiB,
    )
