"""`manage.py serve` (what bin/serve runs) from nothing: no var/ folder, a DATABASE_URL of its own; it says
which backends it uses, serves pages and static files through gunicorn, keeps the admin's password, restarts
a worker that dies and stops everything on SIGTERM."""

import os
import re
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.hashers import check_password

from leaderboard.embedded import free_port
from leaderboard.serving.supervisor import session_members
from tests.submissions.processes import kill_session, wait_until

pytestmark = pytest.mark.slow


def children_of(parent: int) -> list[int]:
    """The processes whose parent is `parent` (the supervisor's programs, each in a session of its own)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def children_named(parent: int, word: bytes) -> list[int]:
    found = []
    for pid in children_of(parent):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                if word in file.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_serve_from_a_fresh_clone_with_its_own_database(tmp_path, redis_conn):
    var = tmp_path / "fresh" / "var"  # does not exist yet, nor does its parent
    database = tmp_path / "own.sqlite3"
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{database}",
        "LEADERBOARD_VAR_DIR": str(var),
        "REDIS_URL": settings.REDIS_URL,
        "PYTHONUNBUFFERED": "1",
        "DEBUG": "1",
    }
    env.pop("EVALUATOR_WORK_DIR", None)
    output = tmp_path / "serve.log"
    with output.open("wb") as log:
        serve = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port)],
            cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        wait_until(lambda: b"site:" in output.read_bytes() or serve.poll() is not None, 300, what="serve")
        text = output.read_text()
        assert serve.poll() is None, text[-3000:]
        assert f"database: sqlite at sqlite:///{database}" in text
        assert "queue:    Redis at" in text
        assert "web:      gunicorn" in text
        password = re.search(r"password (\S+) \(saved in (\S+)\)", text)
        saved = var / "admin-password.txt"
        assert password.group(2) == str(saved)
        assert saved.read_text().strip() == password.group(1)
        assert saved.stat().st_mode & 0o777 == 0o600
        with sqlite3.connect(database) as db:
            [(hashed,)] = db.execute("SELECT password FROM auth_user WHERE username = 'admin'").fetchall()
        assert check_password(password.group(1), hashed)

        site = f"http://127.0.0.1:{port}"
        wait_until(lambda: answers(site + "/healthz"), 60, what="the web server")
        assert answers(site + "/levels/2/")
        assert answers(site + "/static/css/site.css")

        [worker] = children_named(serve.pid, b"evaluation_worker")
        os.kill(worker, signal.SIGKILL)
        wait_until(lambda: [p for p in children_named(serve.pid, b"evaluation_worker") if p != worker], 60,
                   what="the worker to be restarted")  # fmt: skip
        wait_until(lambda: not session_members(worker), 30, what="the killed worker's scheduler to go")

        programs = children_of(serve.pid)
        assert len(programs) == 2  # gunicorn and the worker
        everything = [member for program in programs for member in session_members(program)]
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=60) == 0, output.read_text()[-3000:]
        wait_until(lambda: all(map(gone, everything)), 30, what="every program and its children to stop")
    finally:
        kill_session(serve.pid)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status == 200
    except OSError:
        return False
