"""Where a submission is evaluated: the hardware targets it may choose and the queue and device of each."""

from django.conf import settings
from django.db.models import Q

from leaderboard.models import Hardware
from leaderboard.reference_data import CPU_HARDWARE


class SubmissionRefused(Exception):
    """A submission that cannot be accepted for a reason other than its bundle (e.g. no such hardware)."""


def evaluation_targets():
    """Hardware that submissions may target: each with a worker queue, and the CPU target."""
    return Hardware.objects.filter(~Q(queue="") | Q(name=CPU_HARDWARE))


def target_names() -> str:
    return ", ".join(evaluation_targets().values_list("name", flat=True)) or "none configured"


def find_target(name: str) -> Hardware:
    """The evaluation target of that name (any case); SubmissionRefused naming the choices if none."""
    hardware = evaluation_targets().filter(name__iexact=name.strip()).first()
    if hardware is None:
        raise SubmissionRefused(f"unknown hardware {name!r}; choose one of: {target_names()}")
    return hardware


def route(hardware: Hardware) -> tuple[str, str]:
    """(queue, device) for a hardware target: GPU queues evaluate on CUDA, the cpu queue on the CPU.

    Only the CPU target may lack a queue (it is then served by 'cpu'); other hardware without one (a GPU
    of the reported scores that no worker has) is refused, never quietly evaluated on the CPU.
    """
    queue = hardware.queue or ("cpu" if hardware.name == CPU_HARDWARE else "")
    if not queue:
        raise SubmissionRefused(
            f"hardware {hardware.name} has no evaluation queue; choose one of: {target_names()}"
        )
    if queue not in settings.QUEUE_NAMES:
        raise SubmissionRefused(f"no evaluation queue {queue!r} for hardware {hardware.name}")
    return queue, "cpu" if queue == "cpu" else "cuda"
