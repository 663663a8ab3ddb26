"""Launching untrusted code: a fresh isolated interpreter, scrubbed environment, no network, limits, kill."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator import cgroups, isolation, untrusted
from evaluator.protocol import ChildGone, Deadline, MessageReader, write_message

logger = logging.getLogger(__name__)

HARNESS_ROOT = isolation.HARNESS_ROOT
# Variables a child may inherit; everything else (DATABASE_URL, SECRET_KEY, REDIS_URL, …) is dropped.
ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH")
ENV_ALLOW_PREFIXES = ("TRITON_", "NVIDIA_", "NCCL_", "TORCH_SYMM_", "NVSHMEM_")
MiB, GiB = 1 << 20, 1 << 30
LOG_TAIL = 200_000
EXTENSION_BYTES = 4 * GiB  # a built extension copied in or out of the compile cache, at most
SANDBOX_USER = "kb-sandbox"
# Isolated mode (-I ignores every PYTHON* variable, so these are flags): unbuffered output, so what a
# kernel printed is in its log even when the process is killed right after its last message; no .pyc.
CHILD_PYTHON_FLAGS = ("-I", "-u", "-B")
NAMESPACE_FLAGS = {"-n": "network", "-m": "mount", "-p": "pid", "-i": "ipc", "-r": "user"}
FILESYSTEM_VIEW = (
    "new root: read-only binds of the system, Python and harness folders, a minimal /dev, private /tmp "
    "and /dev/shm, its own temp dir; nothing else of the host (project, settings, work folders, /run, /home)"
)

# The child's first lines: confinement before anything else is imported, then the harness's child.
BOOT = """
import sys
sys.path.insert(0, {root!r})
from evaluator.confine import confine
if confine(sys.argv[1]) == "probe":
    sys.exit(0)
from evaluator.child import main
sys.exit(main(sys.argv[1:]))
"""


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


def network_isolation() -> list[str]:
    """The command prefix that starts a child in fresh namespaces on this host, or [] where none works."""
    return list(isolation.detect(sys.executable).unshare)


def total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 64 * GiB


def default_limits(
    device: str,
    output_bytes: int = 0,
    input_bytes: int = 0,
    memory_limit_mb: int | None = None,
    max_tasks: int | None = None,
    temp_dir_mb: int | None = None,
) -> Limits:
    """Limits sized for the device and the task: no address-space cap with CUDA; room for the outputs.

    The keyword arguments override the defaults (a manifest's memory_limit_mb, max_tasks, temp_dir_mb).
    """
    processes = None
    if os.geteuid() != 0:  # NPROC counts the user's processes and threads; root ignores it anyway
        processes = 4096 + len(os.listdir("/proc"))
    memory = memory_limit_mb * MiB if memory_limit_mb else min(64 * GiB, total_memory() * 3 // 4)
    temp_dir = temp_dir_mb * MiB if temp_dir_mb else 2 * GiB + input_bytes + 16 * output_bytes
    return Limits(
        file_bytes=max(4 * GiB, 4 * output_bytes),
        processes=processes,
        address_space=None if device == "cuda" else 64 * GiB,
        memory_bytes=memory,
        max_tasks=max_tasks or max(4096, 64 * (os.cpu_count() or 1)),
        temp_dir_bytes=temp_dir,
    )


def sandbox_report(limits: Limits, python: str = sys.executable) -> dict[str, Any]:
    """Which isolation layers are active on this host, and why the others are not: environment.sandbox."""
    layers = isolation.detect(python)
    flags = set(layers.unshare)
    namespaces = [name for flag, name in NAMESPACE_FLAGS.items() if flag in flags]
    abi = layers.landlock_abi
    return {
        "fresh_interpreter": True,
        "isolated_mode": True,
        "scrubbed_environment": True,
        "own_temp_dir": True,
        "network_namespace": " ".join(Path(p).name for p in layers.unshare[:3]) if "-n" in flags else None,
        "namespaces": namespaces,
        "pid_namespace_init": layers.init,
        "filesystem_isolation": FILESYSTEM_VIEW if layers.new_root else None,
        "unprivileged_user": unprivileged_user(layers),
        "landlock": {
            "abi": abi,
            "filesystem": "reads limited to the sandbox's view, writes to its own temp dir",
            "tcp": "bind and connect denied" if abi >= 4 else None,
            "scopes": "signals and abstract UNIX sockets kept inside" if abi >= 6 else None,
        }
        if abi
        else None,
        "cgroup": {
            "version": layers.cgroups[0].version,
            "memory_bytes": limits.memory_bytes,
            "max_tasks": limits.max_tasks,
        }
        if layers.cgroups
        else None,
        "temp_dir": f"tmpfs, at most {limits.temp_dir_bytes} bytes" if layers.temp_tmpfs else "disk",
        "rlimits": {name: value for name, value in limits.rlimits().items() if value is not None},
        "process_group_kill": True,
        "results_channel": "pipe (harness-owned fd); outputs by file, opened without following links and "
        "loaded with weights_only",
        "runs_as_root": os.geteuid() == 0,
        "absent": dict(layers.absent),
    }


def unprivileged_user(layers: isolation.Layers) -> str | None:
    if not layers.user:
        return None
    if layers.uid_span == 1:
        return f"uid {layers.uid_base}, shared by every child"
    return f"a uid of {layers.uid_base}+ per child"


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
        }
    )
    env.update(extra)
    return env


@dataclass
class ChildProcess:
    """One sandboxed child: its temp dir, pipes, log file and process; always killed on exit.

    `extensions` is the compile-cache folder of the kernel's source. With a new root the child never gets
    it: a copy is placed in its temp dir and bound at a fixed path (so builds stay valid), and a build is
    copied back by `save_extensions`; without one, the folder itself is the child's TORCH_EXTENSIONS_DIR.
    """

    spec: dict[str, Any]
    limits: Limits
    env_extra: dict[str, str] = field(default_factory=dict)
    python: str = sys.executable
    workdir: Path | None = None
    process: subprocess.Popen | None = None
    extensions: Path | None = None

    def __enter__(self) -> ChildProcess:
        self.layers = isolation.detect(self.python)
        self.workdir = Path(tempfile.mkdtemp(prefix=isolation.temp_dir_prefix()))
        size = self.limits.temp_dir_bytes
        self.tmpfs = self.layers.temp_tmpfs and isolation.mount_tmpfs(self.workdir, size)
        copy = self.extensions is not None and self.layers.new_root
        self.place = isolation.Placement(
            workdir=self.workdir,
            scratch=self.workdir / "scratch",
            extensions=(self.workdir / "ext") if copy else self.extensions,
            uid=isolation.pick_uid(self.layers) if self.layers.user else None,
        )
        if copy and self.extensions.is_dir():
            untrusted.copy_tree(self.extensions, self.place.extensions, EXTENSION_BYTES)
        isolation.prepare_folders(self.place, self.layers)
        self.group = None
        if self.layers.cgroups:
            self.group = cgroups.ChildGroup(
                list(self.layers.cgroups), self.limits.memory_bytes, self.limits.max_tasks
            )
        return self

    def __exit__(self, *exc_info) -> None:
        self.kill()
        if self.group is not None:
            self.group.destroy()
        if self.tmpfs:
            isolation.unmount(self.workdir)
        shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def scratch(self) -> Path:
        """The one folder the candidate may write: its HOME and TMPDIR, where its outputs go."""
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

    def add_payload(self, write: Callable[[Path], None]) -> str:
        """Have write() put the inputs file in the temp dir, readable by the sandbox; return its path."""
        target = self.workdir / "inputs.pt"
        write(target)
        os.chmod(target, 0o644)
        return str(target)

    def extension_dir(self) -> str | None:
        if self.extensions is None:
            return None
        return isolation.EXTENSIONS_MOUNT if self.layers.new_root else str(self.extensions)

    def save_extensions(self) -> None:
        """After a build: copy what the child built into the compile cache (with a new root only)."""
        if self.extensions is not None and self.place.extensions != self.extensions:
            shutil.rmtree(self.extensions, ignore_errors=True)
            untrusted.copy_tree(self.place.extensions, self.extensions, EXTENSION_BYTES)

    def start(self) -> None:
        """Start the child; the spec goes in a file, results come back on a pipe the harness owns."""
        result_read, result_write = os.pipe()
        command_read, command_write = os.pipe()
        rlimits = self.limits.rlimits()
        if self.layers.user:
            rlimits["RLIMIT_NPROC"] = self.limits.max_tasks  # its own user: only its own tasks count
        procs = self.group.create() if self.group is not None else []
        spec = {**self.spec, "result_fd": result_write, "command_fd": command_read}
        spec["private_temp_dir"] = bool(self.tmpfs)
        spec["sandbox"] = isolation.child_plan(
            self.layers, self.python, self.place, rlimits, self.limits.tmp_bytes, procs
        )
        spec_path = self.workdir / "spec.json"
        spec_path.write_text(json.dumps(spec))
        os.chmod(spec_path, 0o644)
        command = [
            *self.layers.unshare,
            self.python,
            *CHILD_PYTHON_FLAGS,
            "-c",
            BOOT.format(root=str(HARNESS_ROOT)),
            str(spec_path),
        ]
        extra = dict(self.env_extra)
        if self.extension_dir():
            extra["TORCH_EXTENSIONS_DIR"] = self.extension_dir()
        with open(self.log_path, "wb") as log:
            os.chmod(self.log_path, 0o644)
            self.log_fd = os.open(self.log_path, os.O_RDONLY | os.O_CLOEXEC)
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=scrubbed_environment(self.scratch, extra),
                pass_fds=(result_write, command_read),
                start_new_session=True,
                close_fds=True,
            )
        os.close(result_write)
        os.close(command_read)
        self.reader = MessageReader(result_read)
        self.result_fd = result_read
        self.command_fd = command_write

    def receive(self, timeout: float) -> dict[str, Any]:
        """The next message; raises Deadline or ChildGone."""
        return self.reader.read(time.monotonic() + timeout)

    def send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(BrokenPipeError):
            write_message(self.command_fd, message)

    def wait_exit(self, timeout: float = 10.0) -> int | None:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.process.poll()

    def kill(self) -> None:
        """Kill the whole process group (and with it the namespace's init) and close the pipe ends."""
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

    def output_file(self, name: str, max_bytes: int):
        """One of the child's output files, opened safely (see evaluator.untrusted)."""
        return untrusted.open_regular(self.scratch / name, max_bytes)

    def limit_hit(self) -> str | None:
        """Why the child was killed by a resource limit of the harness's, or None."""
        if self.group is not None and self.group.oom_kills():
            return (
                f"killed by the kernel for going over its host memory limit of "
                f"{self.limits.memory_bytes / GiB:.1f} GiB"
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


__all__ = ["ChildGone", "ChildProcess", "Deadline", "Limits", "default_limits", "sandbox_report"]
