"""The evaluation worker: an RQ worker that reaps stale runs on a timer and reports dead horses.

An idle worker wakes every MAINTENANCE_INTERVAL_S from its blocking wait on the queues (RQ's default waits
405 s) to run its maintenance, the reaper included, so a run whose worker died is requeued within
`reaper.DEFAULT_STALE_AFTER_S` + MAINTENANCE_INTERVAL_S of its last heartbeat while any worker is alive.
Every process the worker forks (its job processes, RQ's scheduler) dies with it, so a worker killed hard
leaves nothing behind: the harness dies with the job process in turn, and the run is requeued.
"""

import ctypes
import logging
import os
import signal
import sys

from django.db import connections
from rq import Worker

from evaluator.sandbox.isolation import protect_process
from leaderboard.submissions import jobs, reaper
from leaderboard.submissions.execution import PR_SET_PDEATHSIG

logger = logging.getLogger(__name__)

MAINTENANCE_INTERVAL_S = 10
"""Seconds between maintenance runs (RQ's registry cleaning and the reaper), idle or not."""

REDIS_RETRY_MAX_S = 10
"""Longest pause between reconnection attempts while Redis is unreachable (RQ's default is 60 s)."""


FORKING_PID = {"pid": 0}
"""The pid of the process that is forking, recorded just before each fork."""


def remember_forking_process() -> None:
    FORKING_PID["pid"] = os.getpid()


def die_with_forking_process() -> None:
    """In a forked child (Linux): be killed when the process that forked it dies; exit at once if it
    already has."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != FORKING_PID["pid"]:
        os._exit(1)


def forked_children_die_with_their_parent() -> None:
    """From now on, every os.fork() of this process (RQ's job processes and scheduler) makes a child that
    dies with its parent; registered once per process."""
    if sys.platform.startswith("linux") and not FORKING_PID.get("registered"):
        os.register_at_fork(before=remember_forking_process, after_in_child=die_with_forking_process)
        FORKING_PID["registered"] = True


class EvaluationWorker(Worker):
    """A forking RQ worker for evaluation queues (one per GPU)."""

    stale_after = reaper.DEFAULT_STALE_AFTER_S
    max_connection_wait_time = REDIS_RETRY_MAX_S

    def __init__(self, *args, **kwargs):
        protect_process()  # its horses inherit it: kernels of the same user cannot read their /proc
        forked_children_die_with_their_parent()
        kwargs.setdefault("work_horse_killed_handler", jobs.work_horse_killed)
        kwargs.setdefault("maintenance_interval", MAINTENANCE_INTERVAL_S)
        super().__init__(*args, **kwargs)

    @property
    def dequeue_timeout(self) -> int:
        """How long one blocking wait on the queues lasts: maintenance runs between two waits."""
        return MAINTENANCE_INTERVAL_S

    @property
    def stop_requested(self) -> bool:
        """Whether a signal asked this worker to stop (as opposed to it giving up on a lost Redis)."""
        return self._stop_requested or self._shutdown_requested_date is not None

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
