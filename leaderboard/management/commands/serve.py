"""Run the whole site locally: queue (embedded if needed), migrations, seed data, a worker, the web server."""

import logging
import os
import secrets
import subprocess
import sys
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import BaseCommand, call_command

from leaderboard.embedded import describe_database, reachable_redis

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Run the site with its embedded defaults: SQLite, a local Redis, seed data and a CPU worker."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8000)), help="Web port.")
        parser.add_argument("--host", default="127.0.0.1", help="Address the web server binds.")
        parser.add_argument("--no-worker", action="store_true", help="Do not start an evaluation worker.")

    def handle(self, *args, port, host, no_worker, **options):
        with reachable_redis(settings.VAR_DIR / "redis") as (redis_url, queue_description):
            env = {**os.environ, "REDIS_URL": redis_url}
            call_command("migrate", interactive=False, verbosity=0)
            call_command("seed")
            call_command("suites")  # the task suites, and how to import KernelBench while it is missing
            password = self.ensure_demo_admin()
            children = [] if no_worker else [self.start_worker(env)]
            children.append(self.start_web(env, host, port))
            self.report(host, port, queue_description, password, with_worker=not no_worker)
            self.wait(children)

    def ensure_demo_admin(self) -> str | None:
        """Create an 'admin' superuser on first run (DEBUG only); return its new password, if created."""
        users = get_user_model().objects
        if not settings.DEBUG or users.filter(is_superuser=True).exists():
            return None
        password = secrets.token_urlsafe(12)
        users.create_superuser("admin", "admin@localhost", password)
        (settings.VAR_DIR / "admin-password.txt").write_text(password + "\n")
        return password

    def start_worker(self, env) -> subprocess.Popen:
        """One evaluation worker: the cpu queue (CPU-only results), plus the local GPU's queue on CUDA."""
        queues = ["cpu", "compile", "default"]
        gpu_queue = os.environ.get("LEADERBOARD_WORKER_GPU_QUEUE", "")
        if settings.EVALUATOR["DEVICE"] == "cuda" and gpu_queue in settings.GPU_QUEUES:
            queues.insert(0, gpu_queue)
        log = open(settings.VAR_DIR / "worker.log", "ab")  # noqa: SIM115 - lives as long as the worker
        return subprocess.Popen(
            [sys.executable, "manage.py", "evaluation_worker", *queues],
            env=env,
            cwd=settings.BASE_DIR,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def start_web(self, env, host, port) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
            env=env,
            cwd=settings.BASE_DIR,
        )

    def report(self, host, port, queue_description, password, with_worker):
        database = describe_database(os.environ.get("DATABASE_URL"))
        lines = [
            f"database: {database}",
            f"queue:    {queue_description}",
            f"worker:   {'evaluating on ' + settings.EVALUATOR['DEVICE'] if with_worker else 'not started'}"
            f" (log: {settings.VAR_DIR / 'worker.log'})",
            f"site:     http://{host}:{port}/",
        ]
        if password:
            lines.append(f"admin:    user 'admin', password {password} (saved in var/admin-password.txt)")
        self.stdout.write("\n".join(lines))

    def wait(self, children):
        try:
            while all(child.poll() is None for child in children):
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            for child in children:
                child.terminate()
            for child in children:
                child.wait(timeout=10)
