"""Run an evaluation worker on one or more queues, optionally pinned to one GPU."""

import os
import socket

from django.conf import settings
from django.core.management import BaseCommand, CommandError
from redis.exceptions import ConnectionError as RedisConnectionError
from rq.logutils import setup_loghandlers


class Command(BaseCommand):
    help = (
        "Run an evaluation worker: `evaluation_worker gpu-h200 --gpu 0` (one per GPU) or "
        "`evaluation_worker cpu` (CPU-only evaluation). Any number of hosts may share Redis and the database."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "queues", nargs="+", help=f"Queues to serve, of: {', '.join(settings.QUEUE_NAMES)}."
        )
        parser.add_argument("--gpu", help="Pin the worker to this GPU (sets CUDA_VISIBLE_DEVICES).")
        parser.add_argument("--name", help="Worker name (default: host, GPU and process id).")
        parser.add_argument("--burst", action="store_true", help="Exit once the queues are empty.")
        parser.add_argument("--max-jobs", type=int, help="Exit after this many jobs.")
        parser.add_argument("--no-scheduler", action="store_true", help="Do not move delayed retries back.")
        parser.add_argument(
            "--stale-after", type=float, help="Seconds without heartbeat before a run is requeued."
        )

    def handle(self, *args, queues, gpu, name, burst, max_jobs, no_scheduler, stale_after, **options):
        unknown = [queue for queue in queues if queue not in settings.QUEUE_NAMES]
        if unknown:
            raise CommandError(f"unknown queues {unknown}; known: {settings.QUEUE_NAMES}")
        if gpu is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = gpu  # inherited by the harness subprocess
        setup_loghandlers("DEBUG" if options["verbosity"] > 1 else "INFO")
        worker = self.build_worker(queues, name or self.default_name(gpu))
        if stale_after is not None:
            worker.stale_after = stale_after
        try:
            worker.work(burst=burst, with_scheduler=not no_scheduler, max_jobs=max_jobs)
        except RedisConnectionError as error:
            raise CommandError(f"cannot reach Redis: {error}") from error

    @staticmethod
    def default_name(gpu) -> str:
        where = f"gpu{gpu}" if gpu is not None else "cpu"
        return f"{socket.gethostname()}-{where}-{os.getpid()}"

    @staticmethod
    def build_worker(queues, name):
        import django_rq
        from django.db import connections

        from leaderboard.submissions.workers import EvaluationWorker

        connections.close_all()
        return django_rq.get_worker(*queues, worker_class=EvaluationWorker, name=name)
