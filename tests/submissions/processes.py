"""Real worker processes for the end-to-end tests, and killing them as a lost machine would die."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection


def worker_database_url() -> str:
    """DATABASE_URL of the test database, for worker subprocesses; skips when it is in-memory SQLite."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        if "memory" in str(db["NAME"]):
            pytest.skip("worker processes need a database on disk or PostgreSQL")
        return f"sqlite:///{db['NAME']}"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


class Workers:
    """Real `manage.py evaluation_worker` processes on the tests' database and Redis; killed at the end."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.processes: list[subprocess.Popen] = []
        self.env = {
            **os.environ,
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "EVALUATOR_WORK_DIR": str(settings.EVALUATOR["WORK_DIR"]),
            "LEADERBOARD_VAR_DIR": str(tmp_path / "var"),
            "PYTHONUNBUFFERED": "1",
        }

    def start(self, *args: str, queue: str = "cpu") -> subprocess.Popen:
        with (self.tmp_path / f"worker-{len(self.processes)}.log").open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "manage.py", "evaluation_worker", queue, *args],
                cwd=settings.BASE_DIR,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append(process)
        return process

    def run_burst(self, timeout: float = 400, queue: str = "cpu") -> int:
        """Run one worker until the queue is empty; return its exit status."""
        process = self.start("--burst", queue=queue)
        return process.wait(timeout=timeout)

    def logs(self) -> str:
        return "\n".join(
            path.read_text(errors="replace") for path in sorted(self.tmp_path.glob("worker-*.log"))
        )

    def stop_all(self):
        for process in self.processes:
            if process.poll() is None:
                kill_session(process.pid)
                process.wait(timeout=30)


def session_members(session_id: int) -> list[int]:
    """Every process whose session id is session_id (a worker, its horse and the harness under it)."""
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
    """SIGKILL a worker and everything under it, as a machine losing power would."""
    for pid in session_members(session_id):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_until(predicate, timeout: float, interval: float = 0.5, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
