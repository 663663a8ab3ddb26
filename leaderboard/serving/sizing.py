"""How many web processes and threads this machine gets (no Django needed: gunicorn's config reads it)."""

import os

THREADS_PER_WORKER = 4
"""Threads of one web process: enough to overlap database waits and slow clients, few enough that the
Python lock is not fought over (a cached page costs ~5 ms of CPU)."""


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def positive(name: str, default: int) -> int:
    """A positive whole number from the environment, or the default."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{name}={text!r} must be a whole number of at least 1")
    return int(text)


def web_size() -> tuple[int, int]:
    """(processes, threads per process): one process per core, WEB_WORKERS and WEB_THREADS override."""
    return positive("WEB_WORKERS", cores()), positive("WEB_THREADS", THREADS_PER_WORKER)
