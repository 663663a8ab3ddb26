"""The evaluation worker: an RQ worker that reaps stale runs during maintenance and reports dead horses."""

import logging

from django.db import connections
from rq import Worker

from evaluator.isolation import protect_process
from leaderboard.submissions import jobs, reaper

logger = logging.getLogger(__name__)

MAINTENANCE_INTERVAL_S = 60


class EvaluationWorker(Worker):
    """A forking RQ worker for evaluation queues (one per GPU)."""

    stale_after = reaper.DEFAULT_STALE_AFTER_S

    def __init__(self, *args, **kwargs):
        protect_process()  # its horses inherit it: kernels of the same user cannot read their /proc
        kwargs.setdefault("work_horse_killed_handler", jobs.work_horse_killed)
        kwargs.setdefault("maintenance_interval", MAINTENANCE_INTERVAL_S)
        super().__init__(*args, **kwargs)

    def fork_work_horse(self, job, queue):
        # A database connection must never be shared between the worker and its forked horse.
        connections.close_all()
        super().fork_work_horse(job, queue)

    def run_maintenance_tasks(self):
        super().run_maintenance_tasks()
        try:
            for reaped in reaper.reap(self.stale_after):
                logger.warning("reaped run %s: %s (%s)", reaped.run_id, reaped.action, reaped.reason)
        except Exception:
            logger.exception("reaping stale runs failed")
        finally:
            connections.close_all()
