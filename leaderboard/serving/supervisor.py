"""A small process supervisor: starts the web server and the workers, restarts whichever dies, stops all.

Each program runs in a session of its own, so stopping it reaches everything under it (a worker's horse
and harness too); each is asked to die if the supervisor itself dies (Linux parent-death signal). A program
that dies has whatever is left of its session killed, and is started again after a back-off that doubles
while it keeps dying young and resets once it has lived MIN_UPTIME_S.
"""

import contextlib
import ctypes
import functools
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
MIN_UPTIME_S = 30.0
POLL_S = 0.5
STOP_GRACE_S = 15.0


@dataclass
class Program:
    """A command to keep running; `log` is a file for its output (None: the supervisor's own)."""

    name: str
    command: list[str]
    env: dict[str, str]
    log: Path | None = None
    process: subprocess.Popen | None = field(default=None, repr=False)
    started_at: float = 0.0
    backoff: float = FIRST_BACKOFF_S
    restart_at: float | None = None
    restarts: int = 0


def terminate_with_parent(parent_pid: int) -> None:
    """In a child (Linux): get SIGTERM when the supervisor dies; exit if it already has."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent_pid:
            os._exit(1)


class Supervisor:
    """Keeps its programs running until stop() is called (from a signal handler or another thread)."""

    def __init__(self, programs: list[Program], cwd: Path):
        self.programs, self.cwd = programs, cwd
        self.stopping = threading.Event()

    def start(self, program: Program) -> None:
        output = program.log.open("ab") if program.log else None
        try:
            program.process = subprocess.Popen(
                program.command,
                cwd=self.cwd,
                env=program.env,
                stdout=output,
                stderr=subprocess.STDOUT if output else None,
                start_new_session=True,
                preexec_fn=functools.partial(terminate_with_parent, os.getpid()),
            )
        finally:
            if output:
                output.close()  # the child holds its own descriptor
        program.started_at, program.restart_at = time.monotonic(), None
        logger.info("started %s (pid %s)", program.name, program.process.pid)

    def check(self, program: Program) -> None:
        """Schedule a restart of a program that died, or do one that is due."""
        now = time.monotonic()
        if program.restart_at is not None:
            if now >= program.restart_at:
                program.restarts += 1
                self.start(program)
            return
        code = program.process.poll() if program.process else None
        if code is None:
            return
        kill_session(program.process.pid)  # what it left behind (an RQ scheduler, a job process)
        lived = now - program.started_at
        young = lived < MIN_UPTIME_S
        program.backoff = min(program.backoff * 2, MAX_BACKOFF_S) if young else FIRST_BACKOFF_S
        program.restart_at = now + program.backoff
        logger.warning(
            "%s (pid %s) exited with %s after %.0f s; restarting in %.0f s",
            program.name, program.process.pid, code, lived, program.backoff,
        )  # fmt: skip

    def run(self) -> None:
        """Start every program and keep them running until stop(); then stop them all."""
        try:
            for program in self.programs:
                self.start(program)
            while not self.stopping.wait(POLL_S):
                for program in self.programs:
                    self.check(program)
        finally:
            self.stop_all()

    def stop(self, *_signal_args) -> None:
        self.stopping.set()

    def stop_all(self) -> None:
        """SIGTERM each program (its process group: gunicorn's workers are in it), then SIGKILL whatever is
        left of its session after the grace period (an RQ horse has a group of its own, the harness too)."""
        running = [p.process for p in self.programs if p.process and p.process.poll() is None]
        for process in running:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for process in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
        for program in self.programs:
            if program.process:
                kill_session(program.process.pid)
                program.process.wait()


def session_members(session_id: int) -> list[int]:
    """Every process whose session id is session_id."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == session_id:
            members.append(int(stat.parent.name))
    return members


def kill_session(session_id: int) -> None:
    """SIGKILL every process of a session."""
    for pid in session_members(session_id):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
