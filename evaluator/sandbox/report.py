"""What the sandbox gives a child on this host, as every result's environment.sandbox reports it."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from evaluator.sandbox import isolation
from evaluator.sandbox.limits import Limits

NAMESPACE_FLAGS = {"-n": "network", "-m": "mount", "-p": "pid", "-i": "ipc", "-r": "user"}
FILESYSTEM_VIEW = (
    "new root: read-only binds of the system, Python and harness folders, a minimal /dev, private /tmp "
    "and /dev/shm, its own temp dir; nothing else of the host (project, settings, work folders, /run, /home)"
)
RESULTS_CHANNEL = (
    "JSON lines over pipes the harness owns; outputs through shared-memory slots read by the reference "
    "process (no output or input file)"
)


def network_isolation() -> list[str]:
    """The command prefix that starts a child in fresh namespaces on this host, or [] where none works."""
    return list(isolation.detect(sys.executable).unshare)


def unprivileged_user(layers: isolation.Layers) -> str | None:
    if not layers.user:
        return None
    if layers.uid_span == 1:
        return f"uid {layers.uid_base}, shared by every child"
    shared = isolation.reference_uid(layers)
    return f"a uid of {layers.uid_base}+ per candidate; the reference processes share uid {shared}"


def landlock_report(abi: int) -> dict[str, Any] | None:
    if not abi:
        return None
    return {
        "abi": abi,
        "filesystem": "reads limited to the sandbox's view, writes to its own temp dir",
        "tcp": "bind and connect denied" if abi >= 4 else None,
        "scopes": "signals and abstract UNIX sockets kept inside" if abi >= 6 else None,
    }


def sandbox_report(limits: Limits, python: str = sys.executable) -> dict[str, Any]:
    """Which isolation layers are active on this host, and why the others are not: environment.sandbox."""
    layers = isolation.detect(python)
    flags = set(layers.unshare)
    cgroup = None
    if layers.cgroups:
        cgroup = {
            "version": layers.cgroups[0].version,
            "memory_bytes": limits.memory_bytes,
            "max_tasks": limits.max_tasks,
        }
    return {
        "fresh_interpreter": True,
        "isolated_mode": True,
        "scrubbed_environment": True,
        "own_temp_dir": True,
        "network_namespace": " ".join(Path(p).name for p in layers.unshare[:3]) if "-n" in flags else None,
        "namespaces": [name for flag, name in NAMESPACE_FLAGS.items() if flag in flags],
        "pid_namespace_init": layers.init,
        "filesystem_isolation": FILESYSTEM_VIEW if layers.new_root else None,
        "unprivileged_user": unprivileged_user(layers),
        "landlock": landlock_report(layers.landlock_abi),
        "cgroup": cgroup,
        "host_memory_limit": {
            "bytes": limits.memory_bytes,
            "by": "the cgroup" if cgroup else "the harness, summing the process tree's resident memory",
        },
        "temp_dir": f"tmpfs, at most {limits.temp_dir_bytes} bytes" if layers.temp_tmpfs else "disk",
        "rlimits": {name: value for name, value in limits.rlimits().items() if value is not None},
        "process_group_kill": True,
        "parent_death_signal": "SIGKILL",
        "results_channel": RESULTS_CHANNEL,
        "baselines": "timed in a reference process of their own, which never imports candidate code",
        "shared_compile_cache": isolation.cache_is_private(layers),
        "runs_as_root": os.geteuid() == 0,
        "absent": dict(layers.absent),
    }
