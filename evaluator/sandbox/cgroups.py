"""Control groups for sandboxed children: a host-memory and a process-count ceiling, and a sure kill.

The harness creates one group per child under its own (cgroup v1 `memory` and `pids` hierarchies, or a
v2 group where the controllers can be delegated), the child joins it before it runs anything else, and
the harness kills whatever is left in it and removes it at the end. Where no hierarchy is writable
(no root, a read-only cgroup file system) `detect` says why and the layer is reported as absent.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Hierarchy:
    """Where one controller lives: the folder of this process's own group in it, and its file names."""

    controller: str
    base: Path
    version: int

    @property
    def limit_file(self) -> str:
        if self.controller == "pids":
            return "pids.max"
        return "memory.limit_in_bytes" if self.version == 1 else "memory.max"


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, file-system type, super options) of every mounted cgroup hierarchy."""
    found = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo", encoding="utf-8") as lines:
        for line in lines:
            left, _, right = line.partition(" - ")
            fstype, _source, options = (right.split() + ["", "", ""])[:3]
            if fstype in ("cgroup", "cgroup2"):
                found.append((left.split()[4], fstype, set(options.split(","))))
    return found


def _own_groups() -> dict[str, str]:
    """This process's group per v1 controller, and under '' its v2 group."""
    groups = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup", encoding="utf-8") as lines:
        for line in lines:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                groups[controller] = path
    return groups


def _writable_base(base: Path) -> bool:
    probe = base / f"kb-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


def _v2_base(mount_point: str, group: str) -> Path | None:
    """A v2 group of ours whose children may use memory and pids (subtree_control), or None."""
    base = Path(mount_point) / group.lstrip("/")
    try:
        available = set((base / "cgroup.controllers").read_text().split())
        enabled = set((base / "cgroup.subtree_control").read_text().split())
    except OSError:
        return None
    if not {"memory", "pids"} <= available:
        return None
    if not {"memory", "pids"} <= enabled:
        try:
            (base / "cgroup.subtree_control").write_text("+memory +pids")
        except OSError:  # busy: processes in the group itself (the v2 "no internal processes" rule)
            return None
    return base


def detect() -> tuple[list[Hierarchy], str]:
    """The hierarchies sandboxed children can be placed in, and a reason when there are none."""
    if os.geteuid() != 0:
        return [], "not root: cgroups are not delegated to this user"
    groups = _own_groups()
    v1 = {}
    for mount_point, fstype, options in _mounts():
        for controller in ("memory", "pids"):
            if fstype == "cgroup" and controller in options and controller in groups:
                v1[controller] = Hierarchy(controller, Path(mount_point) / groups[controller].lstrip("/"), 1)
    if len(v1) == 2 and all(_writable_base(h.base) for h in v1.values()):
        return [v1["memory"], v1["pids"]], ""
    for mount_point, fstype, _ in _mounts():
        if fstype == "cgroup2" and "" in groups:
            base = _v2_base(mount_point, groups[""])
            if base is not None and _writable_base(base):
                return [Hierarchy("memory", base, 2), Hierarchy("pids", base, 2)], ""
    return [], "no writable cgroup hierarchy with the memory and pids controllers"


def owner_alive(name: str) -> bool:
    """Whether the harness process a kb-eval-<pid>-… name was made by still runs (unknown names: yes)."""
    parts = name.split("-")
    if len(parts) < 3 or not parts[2].isdigit():
        return True
    return Path(f"/proc/{parts[2]}").exists()


def reap_stale(hierarchies: list[Hierarchy]) -> int:
    """Empty and remove the groups a dead harness left behind (it was SIGKILLed); return how many."""
    removed = 0
    for base in {hierarchy.base for hierarchy in hierarchies}:
        for folder in base.glob("kb-eval-*"):
            if owner_alive(folder.name):
                continue
            ChildGroup([h for h in hierarchies if h.base == base], 0, 0, name=folder.name).destroy(timeout=2)
            removed += not folder.exists()
    return removed


@dataclass
class ChildGroup:
    """One child's groups: created with limits, joined by the child, emptied and removed at the end."""

    hierarchies: list[Hierarchy]
    memory_bytes: int
    max_tasks: int
    name: str = ""

    def create(self) -> list[str]:
        """Make the groups and set the limits; return the cgroup.procs files the child writes itself into."""
        self.name = self.name or f"kb-eval-{os.getpid()}-{uuid.uuid4().hex[:10]}"
        procs = []
        for folder in {self.folder(h) for h in self.hierarchies}:
            folder.mkdir(exist_ok=True)
            procs.append(str(folder / "cgroup.procs"))
        for hierarchy in self.hierarchies:
            value = self.memory_bytes if hierarchy.controller == "memory" else self.max_tasks
            (self.folder(hierarchy) / hierarchy.limit_file).write_text(str(value))
            if hierarchy.controller == "memory" and hierarchy.version == 1:
                with contextlib.suppress(OSError):  # swap too, where swap accounting is on
                    (self.folder(hierarchy) / "memory.memsw.limit_in_bytes").write_text(str(value))
            if hierarchy.controller == "memory" and hierarchy.version == 2:
                with contextlib.suppress(OSError):
                    (self.folder(hierarchy) / "memory.swap.max").write_text("0")
        return sorted(set(procs))

    def folder(self, hierarchy: Hierarchy) -> Path:
        return hierarchy.base / self.name

    def members(self) -> set[int]:
        pids = set()
        for hierarchy in self.hierarchies:
            with contextlib.suppress(OSError, ValueError):
                text = (self.folder(hierarchy) / "cgroup.procs").read_text()
                pids.update(int(line) for line in text.split())
        return pids

    def oom_kills(self) -> int:
        """How many processes of the group the kernel killed for going over the memory limit."""
        for hierarchy in self.hierarchies:
            if hierarchy.controller != "memory":
                continue
            name = "memory.oom_control" if hierarchy.version == 1 else "memory.events"
            with contextlib.suppress(OSError, ValueError):
                for line in (self.folder(hierarchy) / name).read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        return 0

    def destroy(self, timeout: float = 10.0) -> None:
        """Kill every process left in the groups, then remove them."""
        if not self.name:
            return
        deadline = time.monotonic() + timeout
        while (pids := self.members()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        for hierarchy in self.hierarchies:
            try:
                self.folder(hierarchy).rmdir()
            except FileNotFoundError:
                pass
            except OSError as error:
                logger.warning("cannot remove the cgroup %s: %s", self.folder(hierarchy), error)
