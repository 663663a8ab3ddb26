"""Launching untrusted code: a fresh isolated interpreter, scrubbed environment, no network, limits, kill.

A ChildProcess is one sandboxed child (a candidate or a reference process): its temp dir, the pipes it
answers on, the shared-memory slots it may be given, the host folders bound into it, its log. It is started
with a parent-death signal, so it never outlives the harness, and its whole process group is killed when
it is done with.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.sandbox import cgroups, cputime, isolation, untrusted
from evaluator.sandbox.boot import child_command
from evaluator.sandbox.limits import GiB, Limits
from evaluator.sandbox.memwatch import MemoryWatch
from evaluator.sandbox.protocol import ChildGone, Deadline, MessageReader, write_message

logger = logging.getLogger(__name__)
# Every message to and from a child, timestamped, when enabled (EVALUATOR_TRACE: see evaluator.cli).
trace = logging.getLogger("evaluator.trace")

# Variables a child may inherit; everything else (DATABASE_URL, SECRET_KEY, REDIS_URL, …) is dropped.
ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH")
ENV_ALLOW_PREFIXES = ("TRITON_", "NVIDIA_", "NCCL_", "TORCH_SYMM_", "NVSHMEM_")
LOG_TAIL = 200_000
EXTENSION_BYTES = 4 * GiB  # a built extension copied in or out of the compile cache, at most
SANDBOX_USER = "kb-sandbox"
PR_SET_PDEATHSIG = 1


def scrubbed_environment(home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {name: os.environ[name] for name in ENV_ALLOW if name in os.environ}
    env.update({k: v for k, v in os.environ.items() if k.startswith(ENV_ALLOW_PREFIXES)})
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(
        {
            "HOME": str(home),
            "TMPDIR": str(home),
            "USER": SANDBOX_USER,
            "LOGNAME": SANDBOX_USER,
            "TORCHINDUCTOR_CACHE_DIR": str(home / "inductor"),
            "TRITON_CACHE_DIR": str(home / "triton"),
        }
    )
    env.update(extra)
    return env


def die_with_harness() -> None:
    """In the forked child before exec: SIGKILL when the harness thread that started it is gone."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def folder_usage(folder: Path) -> dict[str, int]:
    """Bytes in a folder and its largest file (never following links): what a child left in its temp dir."""
    total = largest = 0
    for parent, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                size = os.lstat(os.path.join(parent, name)).st_size
                total, largest = total + size, max(largest, size)
    return {"bytes": total, "largest_file_bytes": largest}


@dataclass
class Share:
    """A host folder for one child: copied in (and out) with a new root, else used where it is.

    With a new root the child never gets the folder itself: a copy is placed in its temp dir and bound at
    `mount` (so that paths inside builds stay valid) and `save` copies what it wrote back. `direct` folders
    (the reference processes' compile cache) are bound as they are.
    """

    source: Path
    mount: str
    variables: dict[str, str]  # environment variable -> path under the share it points to ("" for itself)
    direct: bool = False
    copy_only: bool = False  # never the folder itself: left out where there is no new root to copy into


@dataclass
class ChildProcess:
    """One sandboxed child: temp dir, pipes, log file, process, its shares; always killed on exit."""

    spec: dict[str, Any]
    limits: Limits
    env_extra: dict[str, str] = field(default_factory=dict)
    python: str = sys.executable
    shares: list[Share] = field(default_factory=list)
    slots_fd: int | None = None  # a candidate's memory file of output slots
    fds_fd: int | None = None  # a reference process's socket for receiving each kernel's memory file
    reference: bool = False
    workdir: Path | None = None
    process: subprocess.Popen | None = None
    watch: MemoryWatch | None = None  # the host-memory limit where no cgroup enforces one
    label: str = ""  # the kernel's or the task's file name, for the trace

    def __enter__(self) -> ChildProcess:
        self.layers = isolation.detect(self.python)
        self.workdir = Path(tempfile.mkdtemp(prefix=isolation.temp_dir_prefix()))
        self.tmpfs = self.layers.temp_tmpfs and isolation.mount_tmpfs(
            self.workdir, self.limits.temp_dir_bytes
        )
        binds, self.copies = [], []
        self.shares = [share for share in self.shares if self.layers.new_root or not share.copy_only]
        for index, share in enumerate(self.shares):
            if share.direct or not self.layers.new_root:
                binds.append(isolation.Bind(share.source, share.mount))
                continue
            copy = self.workdir / f"share{index}"
            if share.source.is_dir():
                untrusted.copy_tree(share.source, copy, EXTENSION_BYTES)
            binds.append(isolation.Bind(copy, share.mount))
            self.copies.append((copy, share))
        uid = None
        if self.layers.user:
            uid = isolation.reference_uid(self.layers) if self.reference else isolation.pick_uid(self.layers)
        self.place = isolation.Placement(self.workdir, self.workdir / "scratch", tuple(binds), uid)
        isolation.prepare_folders(self.place, self.layers)
        self.group = None
        if self.layers.cgroups:
            self.group = cgroups.ChildGroup(
                list(self.layers.cgroups), self.limits.memory_bytes, self.limits.max_tasks
            )
        return self

    def __exit__(self, *exc_info) -> None:
        self.kill()
        self.temp_usage = folder_usage(self.workdir)
        if self.group is not None:
            self.group.destroy()
        if self.tmpfs:
            isolation.unmount(self.workdir)
        shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def scratch(self) -> Path:
        """The one folder of its own the child may write: its HOME and TMPDIR."""
        return self.place.scratch

    @property
    def log_path(self) -> Path:
        return self.workdir / "child.log"

    def add_file(self, source: Path, name: str) -> str:
        """Copy a file into the temp dir, readable (not writable) by the sandbox; return its path."""
        target = self.workdir / name
        shutil.copyfile(source, target)
        os.chmod(target, 0o644)
        return str(target)

    def share_path(self, share: Share, below: str = "") -> str:
        root = share.mount if self.layers.new_root else str(share.source)
        return f"{root}/{below}" if below else root

    def save_shares(self) -> None:
        """Copy what the child wrote into its copied shares back to their host folders (with a new root)."""
        for copy, share in self.copies:
            shutil.rmtree(share.source, ignore_errors=True)
            untrusted.copy_tree(copy, share.source, EXTENSION_BYTES)

    def start(self) -> None:
        """Start the child; the spec goes in a file, messages come back on a pipe the harness owns."""
        result_read, result_write = os.pipe()
        command_read, command_write = os.pipe()
        rlimits = self.limits.rlimits()
        if self.layers.user:
            rlimits["RLIMIT_NPROC"] = self.limits.max_tasks  # its own user: only its own tasks count
        procs = self.group.create() if self.group is not None else []
        spec = {**self.spec, "result_fd": result_write, "command_fd": command_read}
        spec["trace_memory"] = trace.isEnabledFor(logging.DEBUG)  # each reply then carries the GPU peak
        spec.update({"slots_fd": self.slots_fd, "fds_fd": self.fds_fd})
        spec["workdir"] = str(self.scratch)
        spec["private_temp_dir"] = bool(self.tmpfs)
        spec["sandbox"] = isolation.child_plan(
            self.layers, self.python, self.place, rlimits, self.limits.tmp_bytes, procs
        )
        spec_path = self.workdir / "spec.json"
        spec_path.write_text(json.dumps(spec))
        os.chmod(spec_path, 0o644)
        extra = dict(self.env_extra)
        for share in self.shares:
            extra.update({name: self.share_path(share, below) for name, below in share.variables.items()})
        passed = tuple(
            fd for fd in (result_write, command_read, self.slots_fd, self.fds_fd) if fd is not None
        )
        with open(self.log_path, "wb") as log:
            os.chmod(self.log_path, 0o644)
            self.log_fd = os.open(self.log_path, os.O_RDONLY | os.O_CLOEXEC)
            self.process = subprocess.Popen(
                child_command(self.layers.unshare, self.python, spec_path),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=scrubbed_environment(self.scratch, extra),
                pass_fds=passed,
                start_new_session=True,
                close_fds=True,
                preexec_fn=die_with_harness,  # noqa: PLW1509 - a single prctl, no locks taken
            )
        if self.group is None:  # no cgroup limits its host memory: the harness watches it instead
            self.watch = MemoryWatch(self.process.pid, self.limits.memory_bytes)
            self.watch.start()
        os.close(result_write)
        os.close(command_read)
        self.reader = MessageReader(result_read)
        self.result_fd = result_read
        self.command_fd = command_write

    def receive(self, timeout: float) -> dict[str, Any]:
        """The next message; raises Deadline or ChildGone."""
        message = self.reader.read(time.monotonic() + timeout)
        if trace.isEnabledFor(logging.DEBUG):
            peak = f" gpu_peak_mib={message['gpu_peak_mib']}" if "gpu_peak_mib" in message else ""
            trace.debug("%s %s < %s%s", self.label, self.spec.get("role"), message.get("event"), peak)
        return message

    def message_waiting(self, timeout: float) -> bool:
        """Whether the child said something (or ended) within timeout seconds; its message stays unread."""
        reader = getattr(self, "reader", None)
        return reader is not None and reader.waiting(timeout)

    def send(self, message: dict[str, Any]) -> None:
        if trace.isEnabledFor(logging.DEBUG):
            trace.debug("%s %s > %s", self.label, self.spec.get("role"), message.get("cmd"))
        if getattr(self, "command_fd", None) is None:  # not started, or killed: no pipe
            return
        with contextlib.suppress(BrokenPipeError, OSError):
            write_message(self.command_fd, message)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def cpu_ms(self) -> float | None:
        """CPU milliseconds the child's processes have used so far: its tree's and its cgroup's (None where
        /proc cannot tell)."""
        if self.process is None:
            return None
        members = self.group.members() if self.group is not None else frozenset()
        return cputime.tree_cpu_ms(self.process.pid, members)

    def migrations(self) -> int | None:
        """How many times the child's interpreter's main thread has changed CPUs (None where /proc cannot
        tell): pinned to one core, it changes only where its affinity was changed."""
        if self.process is None:
            return None
        pid = cputime.interpreter_pid(self.process.pid, self.layers.init)
        return cputime.thread_migrations(pid) if pid is not None else None

    def wait_exit(self, timeout: float = 10.0) -> int | None:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.process.poll()

    def interrupt(self) -> None:
        """SIGKILL the process group from another thread; the owner's own kill() closes the pipes."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)

    def kill(self) -> None:
        """Kill the whole process group (and with it the namespace's init) and close the pipe ends."""
        if self.watch is not None:
            self.watch.stop()
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)
        for name in ("result_fd", "command_fd"):
            fd = getattr(self, name, None)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, None)

    def log(self) -> str:
        """The tail of what the child printed, read through the harness's own descriptor."""
        fd = getattr(self, "log_fd", None)
        if fd is None:
            return ""
        try:
            size = os.fstat(fd).st_size
            data = os.pread(fd, LOG_TAIL, max(0, size - LOG_TAIL))
        except OSError:
            return ""
        return data.decode("utf-8", errors="replace")

    def limit_hit(self) -> str | None:
        """Why the child was killed by a resource limit of the harness's, or None."""
        if self.group is not None and self.group.oom_kills():
            return (
                f"killed by the kernel for going over its host memory limit of "
                f"{self.limits.memory_bytes / GiB:.1f} GiB"
            )
        if self.watch is not None and self.watch.tripped is not None:
            return (
                f"killed by the harness at {self.watch.tripped / GiB:.1f} GiB resident, over its host memory "
                f"limit of {self.limits.memory_bytes / GiB:.1f} GiB"
            )
        code = self.process.poll() if self.process else None
        if code is not None and self._signal(code) == signal.SIGXCPU:
            return f"killed at its CPU-time limit of {self.limits.cpu_seconds} s (SIGXCPU)"
        return None

    def _signal(self, code: int) -> int | None:
        if code < 0:
            return -code
        if self.layers.init and code > 128:  # the namespace's init reports a signal as 128 + its number
            return code - 128
        return None

    def exit_description(self) -> str:
        code = self.process.poll() if self.process else None
        if code is None:
            return "still running"
        number = self._signal(code)
        if number is not None:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(number).name}"
        return f"exit status {code}"


__all__ = ["ChildGone", "ChildProcess", "Deadline", "Share"]
