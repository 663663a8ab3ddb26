"""What `manage.py serve` prepares and starts: state folders, the first admin, the web and worker programs."""

import os
import secrets
import sys
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from leaderboard.serving.sizing import web_size
from leaderboard.serving.supervisor import Program

WORKER_QUEUES = ["cpu", "compile", "default"]
PASSWORD_FILE = "admin-password.txt"


def state_folders() -> list[Path]:
    """Folders the site writes to, whatever the database: var/, uploads, the evaluator's work folder."""
    return [settings.VAR_DIR, Path(settings.MEDIA_ROOT), Path(settings.EVALUATOR["WORK_DIR"])]


def prepare_state() -> None:
    """Create the state folders before anything is written (a fresh clone has none of them)."""
    for folder in state_folders():
        folder.mkdir(parents=True, exist_ok=True)


def ensure_demo_admin() -> str | None:
    """Create an 'admin' superuser on first run (DEBUG only); return its new password, if created.

    The password is written (mode 0600) before the account is created, and the account is created in a
    transaction that removes the file again if it fails, so a created account's password is never lost.
    """
    users = get_user_model().objects
    if not settings.DEBUG or users.filter(is_superuser=True).exists():
        return None
    password = secrets.token_urlsafe(12)
    path = settings.VAR_DIR / PASSWORD_FILE
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(password + "\n")
    try:
        with transaction.atomic():
            users.create_superuser("admin", "admin@localhost", password)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return password


def bind_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def web_program(env: dict[str, str], host: str, port: int, dev: bool) -> Program:
    """gunicorn with the site's config, or Django's development server (`--dev`: reloads nothing, one
    thread per connection, never for production)."""
    if dev:
        command = [sys.executable, "manage.py", "runserver", bind_address(host, port), "--noreload"]
        return Program("web (development server)", command, env)
    command = [sys.executable, "-m", "gunicorn", "--config", "python:leaderboard.serving.gunicorn_config"]
    return Program("web (gunicorn)", command, {**env, "WEB_BIND": bind_address(host, port)})


def worker_programs(env: dict[str, str], count: int) -> list[Program]:
    """`count` evaluation workers on the CPU queues (plus the local GPU's queue when evaluating on CUDA)."""
    queues = list(WORKER_QUEUES)
    gpu_queue = os.environ.get("LEADERBOARD_WORKER_GPU_QUEUE", "")
    if settings.EVALUATOR["DEVICE"] == "cuda" and gpu_queue in settings.GPU_QUEUES:
        queues.insert(0, gpu_queue)
    return [
        Program(
            f"worker {number}",
            [sys.executable, "manage.py", "evaluation_worker", *queues],
            env,
            log=settings.VAR_DIR / ("worker.log" if count == 1 else f"worker-{number}.log"),
        )
        for number in range(1, count + 1)
    ]


def describe_web(dev: bool) -> str:
    if dev:
        return "Django development server (--dev: not for production)"
    workers, threads = web_size()
    return f"gunicorn, {workers} processes x {threads} threads, static files by WhiteNoise"
