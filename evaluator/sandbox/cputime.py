"""The CPU time a child's process tree has used, read from /proc by the harness (no child can rewrite it).

Every thread of every process in the tree counts, and so do the descendants that ended and were reaped
inside it (a process's children's time). The kernel's processes get one CPU thread and nothing to do while
the baseline is timed: the harness compares these readings with its own clock (evaluator.trusted.speed).
"""

from __future__ import annotations

import contextlib
import os

from evaluator.sandbox.memwatch import PROC, children_of, tree

TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# /proc/PID/stat after the ")" that ends the command name: utime, stime, cutime, cstime sit at 11 to 14.
TIME_FIELDS = slice(11, 15)


def process_ticks(pid: int) -> int:
    """The clock ticks one process and its reaped children used (0 once it is gone)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        stat = (PROC / str(pid) / "stat").read_text()
        return sum(int(value) for value in stat[stat.rindex(")") + 2 :].split()[TIME_FIELDS])
    return 0


def tree_cpu_ms(root: int, members: set[int] | frozenset = frozenset()) -> float | None:
    """Milliseconds of CPU the process tree under root (and `members`, its cgroup's processes) has used so
    far; None where /proc cannot tell."""
    if not (PROC / str(root) / "stat").exists():
        return None
    return sum(process_ticks(pid) for pid in set(tree(root)) | set(members)) * 1e3 / TICKS_PER_S


def interpreter_pid(root: int, in_namespace: bool) -> int | None:
    """The kernel's interpreter: root itself, or in a PID namespace (`unshare --fork`, then the small init
    evaluator.sandbox.confine forks it from) two generations down, each the earliest started child (later
    ones are the kernel's own, or orphans the init took in)."""
    pid: int | None = root
    for _ in range(2 if in_namespace else 0):
        children = children_of(pid)
        pid = min(children, key=start_time) if children else None
        if pid is None:
            return None
    return pid


def start_time(pid: int) -> int:
    """When pid started, in clock ticks since boot (field 22 of /proc/PID/stat); huge where unreadable."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        stat = (PROC / str(pid) / "stat").read_text()
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    return 2**63


def thread_migrations(pid: int) -> int | None:
    """How many times the main thread of pid has moved between CPUs (the scheduler's `se.nr_migrations`);
    None where the kernel does not say (no /proc/PID/task/PID/sched)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in (PROC / str(pid) / "task" / str(pid) / "sched").read_text().splitlines():
            if line.startswith("se.nr_migrations"):
                return int(line.split(":")[1])
    return None
