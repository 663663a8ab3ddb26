"""Queue health: for each hardware a submission may target, its queue, the live workers serving it and
the runs waiting or running there; and the warning a submission gets when no worker serves its queue."""

import logging
from dataclasses import dataclass

import django_rq
from django.db.models import Count, Q
from redis.exceptions import RedisError
from rq import Queue, Worker

from leaderboard.models import EvaluationRun, Hardware
from leaderboard.submissions.routing import SubmissionRefused, evaluation_targets, route

logger = logging.getLogger(__name__)


@dataclass
class QueueHealth:
    hardware: str
    queue: str
    device: str
    workers: int | None  # None: Redis did not answer
    waiting: int = 0
    running: int = 0

    @property
    def served(self) -> bool:
        return bool(self.workers)


def live_workers(queue: str) -> int | None:
    """Workers registered on the queue now (RQ expires a dead worker's key), or None without Redis."""
    try:
        connection = django_rq.get_connection(queue)
        return Worker.count(connection=connection, queue=Queue(queue, connection=connection))
    except RedisError:
        logger.warning("queue health: Redis did not answer for queue %s", queue)
        return None


def run_counts() -> dict[str, tuple[int, int]]:
    """Per queue: (runs queued, runs running), from the database (what the site promised to evaluate)."""
    rows = (
        EvaluationRun.objects.filter(status__in=[EvaluationRun.Status.QUEUED, EvaluationRun.Status.RUNNING])
        .values("queue")
        .annotate(
            waiting=Count("pk", filter=Q(status=EvaluationRun.Status.QUEUED)),
            running=Count("pk", filter=Q(status=EvaluationRun.Status.RUNNING)),
        )
    )
    return {row["queue"]: (row["waiting"], row["running"]) for row in rows}


def health_of(hardware: Hardware, counts: dict, workers: dict) -> QueueHealth | None:
    try:
        queue, device = route(hardware)
    except SubmissionRefused:
        return None
    if queue not in workers:
        workers[queue] = live_workers(queue)
    waiting, running = counts.get(queue, (0, 0))
    return QueueHealth(hardware.name, queue, device, workers[queue], waiting, running)


def queue_health() -> list[QueueHealth]:
    """Every evaluation target with its queue's workers and runs, in name order."""
    counts, workers = run_counts(), {}
    found = (health_of(hardware, counts, workers) for hardware in evaluation_targets().order_by("name"))
    return [health for health in found if health is not None]


def no_worker_warning(hardware: Hardware) -> str:
    """What a submission for this hardware must hear at once when no worker serves its queue, else ''."""
    health = health_of(hardware, run_counts(), {})
    if health is None or health.workers is None:
        return ""
    if health.workers == 0:
        return (
            f"No worker is serving the {health.queue} queue ({health.hardware}) right now: the submission "
            f"stays queued until one starts ({health.waiting} run(s) waiting there)."
        )
    return ""
