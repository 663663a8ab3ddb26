"""Launching untrusted code: a fresh isolated interpreter, scrubbed environment, no network, limits, kill."""

from __future__ import annotations

import contextlib
import functools
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

from evaluator.protocol import ChildGone, Deadline, MessageReader, write_message

logger = logging.getLogger(__name__)

HARNESS_ROOT = Path(__file__).resolve().parent.parent
# Variables a child may inherit; everything else (DATABASE_URL, SECRET_KEY, REDIS_URL, …) is dropped.
ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH")
ENV_ALLOW_PREFIXES = ("TRITON_", "NVIDIA_", "NCCL_", "TORCH_SYMM_", "NVSHMEM_")
GiB = 1 << 30

# The child's first lines: limits before anything else is imported, then the harness from its own root.
BOOT = """
import sys, resource
def _limit(name, value):
    if value is None: return
    kind = getattr(resource, name)
    try: resource.setrlimit(kind, (value, value))
    except (ValueError, OSError): pass
limits = {limits!r}
for _name, _value in limits.items(): _limit(_name, _value)
sys.path.insert(0, {root!r})
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

    def rlimits(self) -> dict[str, int | None]:
        return {
            "RLIMIT_CPU": self.cpu_seconds,
            "RLIMIT_FSIZE": self.file_bytes,
            "RLIMIT_NOFILE": self.open_files,
            "RLIMIT_NPROC": self.processes,
            "RLIMIT_AS": self.address_space,
            "RLIMIT_CORE": 0,
        }


@functools.cache
def network_isolation() -> list[str]:
    """The command prefix that puts a child in a fresh network namespace, or [] where none works."""
    unshare = shutil.which("unshare")
    if not unshare:
        return []
    for prefix in ([unshare, "-n"], [unshare, "-r", "-n"]):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
            if probe.returncode == 0:
                return prefix
    return []


def default_limits(device: str, output_bytes: int = 0) -> Limits:
    """Limits sized for the device: no address-space cap with CUDA; room for the outputs on disk."""
    processes = None
    if os.geteuid() != 0:  # NPROC counts the user's processes and threads; root ignores it anyway
        processes = 4096 + len(os.listdir("/proc"))
    return Limits(
        file_bytes=max(4 * GiB, 4 * output_bytes),
        processes=processes,
        address_space=None if device == "cuda" else 64 * GiB,
    )


def sandbox_report(limits: Limits) -> dict[str, Any]:
    """Which isolation layers are active on this host: the result's environment.sandbox."""
    prefix = network_isolation()
    return {
        "fresh_interpreter": True,
        "isolated_mode": True,
        "scrubbed_environment": True,
        "own_temp_dir": True,
        "network_namespace": " ".join(Path(part).name for part in prefix) if prefix else None,
        "rlimits": {name: value for name, value in limits.rlimits().items() if value is not None},
        "process_group_kill": True,
        "filesystem_isolation": None,
        "results_channel": "pipe (harness-owned fd); outputs by file, loaded with weights_only",
        "runs_as_root": os.geteuid() == 0,
    }


def scrubbed_environment(home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {name: os.environ[name] for name in ENV_ALLOW if name in os.environ}
    env.update({k: v for k, v in os.environ.items() if k.startswith(ENV_ALLOW_PREFIXES)})
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(
        {
            "HOME": str(home),
            "TMPDIR": str(home),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "PYTHONHASHSEED": "0",
        }
    )
    env.update(extra)
    return env


@dataclass
class ChildProcess:
    """One sandboxed child: its temp dir, pipes, log file and process; always killed on exit."""

    spec: dict[str, Any]
    limits: Limits
    env_extra: dict[str, str] = field(default_factory=dict)
    python: str = sys.executable
    workdir: Path | None = None
    process: subprocess.Popen | None = None

    def __enter__(self) -> ChildProcess:
        self.workdir = Path(tempfile.mkdtemp(prefix="kb-eval-"))
        return self

    def __exit__(self, *exc_info) -> None:
        self.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def log_path(self) -> Path:
        return self.workdir / "child.log"

    def start(self) -> None:
        """Start the child; the spec goes in a file, results come back on a pipe the harness owns."""
        result_read, result_write = os.pipe()
        command_read, command_write = os.pipe()
        spec = {**self.spec, "result_fd": result_write, "command_fd": command_read}
        spec_path = self.workdir / "spec.json"
        spec_path.write_text(json.dumps(spec))
        boot = BOOT.format(limits=self.limits.rlimits(), root=str(HARNESS_ROOT))
        command = [*network_isolation(), self.python, "-I", "-c", boot, str(spec_path)]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=scrubbed_environment(self.workdir, self.env_extra),
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
        """Kill the whole process group and close the harness's pipe ends."""
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
        try:
            return self.log_path.read_bytes()[-200_000:].decode("utf-8", errors="replace")
        except OSError:
            return ""

    def exit_description(self) -> str:
        code = self.process.poll() if self.process else None
        if code is None:
            return "still running"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-code).name}"
        return f"exit status {code}"


__all__ = ["ChildGone", "ChildProcess", "Deadline", "Limits", "default_limits", "sandbox_report"]
