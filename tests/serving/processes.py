"""A real gunicorn serving the tests' database, with the configuration bin/serve uses, and its memory."""

import contextlib
import os
import select
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings

from leaderboard.embedded import free_port
from tests.submissions.processes import session_members, wait_until, worker_database_url


def production_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a production deployment (DEBUG off) on the tests' database and Redis."""
    return {
        **os.environ,
        "DATABASE_URL": worker_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "LEADERBOARD_VAR_DIR": str(tmp_path / "var"),
        "DEBUG": "0",
        "SECRET_KEY": "tests-only-secret-key-of-some-length-0123456789",
        "SECURE_SSL_REDIRECT": "0",  # plain HTTP on the loopback, as behind a TLS-terminating proxy
        "ALLOWED_HOSTS": "127.0.0.1",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


class Gunicorn:
    """`python -m gunicorn --config python:leaderboard.serving.gunicorn_config` on a free port."""

    def __init__(self, tmp_path: Path, workers: int = 1, threads: int = 4, **env: str):
        self.port = free_port()
        self.log = tmp_path / "gunicorn.log"
        self.env = production_env(
            tmp_path,
            WEB_BIND=f"127.0.0.1:{self.port}",
            WEB_WORKERS=str(workers),
            WEB_THREADS=str(threads),
            **env,
        )
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def collectstatic(self) -> None:
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
            cwd=settings.BASE_DIR, env=self.env, check=True, timeout=300,
        )  # fmt: skip

    def start(self) -> "Gunicorn":
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "--config", "python:leaderboard.serving.gunicorn_config"],
                cwd=settings.BASE_DIR, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        wait_until(self.answers, 60, interval=0.2, what=f"gunicorn on port {self.port}")
        return self

    def answers(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"gunicorn exited: {self.logs()}")
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=5) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def logs(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    def rss_bytes(self) -> int:
        """Resident memory of the master and its workers together."""
        total = 0
        for pid in session_members(self.process.pid):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        return total

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()


def send_body(url: str, path: str, declared: int, headers: dict[str, str]) -> tuple[bytes, int]:
    """POST a body of `declared` bytes, streamed until all is sent or the server answers or stops reading;
    return the start of the answer and how many body bytes were sent."""
    host, port = url.removeprefix("http://").split(":")
    head = [f"POST {path} HTTP/1.1", f"Host: {host}", f"Content-Length: {declared}"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    block, sent, answer = b"x" * (1 << 20), 0, b""
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        deadline = time.monotonic() + 120
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            while sent < declared and time.monotonic() < deadline:
                if select.select([sock], [], [], 0)[0]:
                    break  # the server answered (or closed) before the body was sent
                sent += sock.send(block[: declared - sent])
        with contextlib.suppress(ConnectionResetError, TimeoutError):
            answer = sock.recv(4096)
    return answer, sent
