"""Run an evaluation worker on one or more queues, optionally pinned to one GPU; it outlives Redis outages."""

import logging
import os
import socket
import time

from django.conf import settings
from django.core.management import BaseCommand, CommandError
from redis.exceptions import RedisError
from rq.exceptions import StopRequested
from rq.logutils import setup_loghandlers

logger = logging.getLogger(__name__)

RECONNECT_FIRST_S = 1.0
RECONNECT_MAX_S = 30.0
STEADY_AFTER_S = 60.0
"""A worker that ran this long before losing Redis starts its back-off from RECONNECT_FIRST_S again."""


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
        name = name or self.default_name(gpu)
        work = {"burst": burst, "with_scheduler": not no_scheduler, "max_jobs": max_jobs}
        if burst or max_jobs:
            self.work_once(self.build_worker(queues, name, stale_after), work)
            return
        try:
            self.work_until_stopped(queues, name, stale_after, work)
        except (StopRequested, KeyboardInterrupt):
            logger.info("worker %s stopped", name)

    def work_once(self, worker, work: dict) -> None:
        try:
            worker.work(**work)
        except RedisError as error:
            raise CommandError(f"cannot reach Redis: {error}") from error

    def work_until_stopped(self, queues, name, stale_after, work: dict) -> None:
        """Work; whenever the worker gives up on Redis, reconnect with back-off; return when asked to stop.

        RQ retries a lost Redis itself only inside its blocking wait; elsewhere (maintenance, a job's
        bookkeeping, registration) it stops its loop. Each new incarnation gets a name of its own, since
        the old one's registration may outlive it in Redis.
        """
        delay, incarnation = RECONNECT_FIRST_S, 0
        while True:
            incarnation += 1
            started = time.monotonic()
            worker = None
            try:
                worker = self.build_worker(
                    queues, name if incarnation == 1 else f"{name}.{incarnation}", stale_after
                )
                worker.work(**work)
            except RedisError as error:
                logger.error("worker %s: Redis unreachable: %s", name, error)
            if worker is not None and worker.stop_requested:
                return
            if time.monotonic() - started > STEADY_AFTER_S:
                delay = RECONNECT_FIRST_S
            logger.warning("worker %s: lost Redis; reconnecting in %.0f s", name, delay)
            time.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX_S)

    @staticmethod
    def default_name(gpu) -> str:
        where = f"gpu{gpu}" if gpu is not None else "cpu"
        return f"{socket.gethostname()}-{where}-{os.getpid()}"

    @staticmethod
    def build_worker(queues, name, stale_after):
        import django_rq
        from django.db import connections

        from leaderboard.submissions.workers import EvaluationWorker

        connections.close_all()
        worker = django_rq.get_worker(*queues, worker_class=EvaluationWorker, name=name)
        if stale_after is not None:
            worker.stale_after = stale_after
        return worker
