"""Run the whole site: queue (embedded if needed), migrations, seed data, workers and the web server."""

import logging
import os
import signal

from django.conf import settings
from django.core.management import BaseCommand, CommandError, call_command

from leaderboard.embedded import describe_database, reachable_redis
from leaderboard.serving import setup
from leaderboard.serving.supervisor import Supervisor

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Run the site under a supervisor that restarts what dies: gunicorn (or, with --dev, Django's "
        "development server) and evaluation workers, on SQLite and an embedded Redis unless configured."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", 8000)), help="Web port.")
        parser.add_argument("--host", default="127.0.0.1", help="Address the web server binds.")
        parser.add_argument("--workers", type=int, default=1, help="Evaluation workers to run (0: none).")
        parser.add_argument("--no-worker", action="store_true", help="Same as --workers 0.")
        parser.add_argument("--dev", action="store_true", help="Django's development server, not gunicorn.")

    def handle(self, *args, port, host, workers, no_worker, dev, **options):
        if workers < 0:
            raise CommandError("--workers must be 0 or more")
        workers = 0 if no_worker else workers
        setup.prepare_state()
        with reachable_redis(settings.VAR_DIR / "redis") as (redis_url, queue_description):
            env = {**os.environ, "REDIS_URL": redis_url}
            call_command("migrate", interactive=False, verbosity=0)
            call_command("seed")
            call_command("suites")  # the task suites, and how to import KernelBench while it is missing
            password = setup.ensure_demo_admin()
            if not dev:
                call_command("collectstatic", interactive=False, verbosity=0)
            programs = [setup.web_program(env, host, port, dev), *setup.worker_programs(env, workers)]
            supervisor = Supervisor(programs, settings.BASE_DIR)
            signal.signal(signal.SIGTERM, supervisor.stop)
            signal.signal(signal.SIGINT, supervisor.stop)
            self.report(host, port, queue_description, password, workers, dev)
            supervisor.run()

    def report(self, host, port, queue_description, password, workers, dev):
        database = describe_database(os.environ.get("DATABASE_URL"))
        worker_log = settings.VAR_DIR / ("worker.log" if workers == 1 else "worker-N.log")
        evaluating = f"{workers} evaluating on {settings.EVALUATOR['DEVICE']} (log: {worker_log})"
        lines = [
            f"database: {database}",
            f"queue:    {queue_description}",
            f"web:      {setup.describe_web(dev)}",
            f"workers:  {evaluating if workers else 'none started'}; restarted if they die",
            f"site:     http://{setup.bind_address(host, port)}/",
        ]
        if password:
            saved = settings.VAR_DIR / setup.PASSWORD_FILE
            lines.append(f"admin:    user 'admin', password {password} (saved in {saved})")
        self.stdout.write("\n".join(lines))
        self.stdout.flush()
