"""The CPU core a GPU kernel's timed calls run on: one core per GPU, shared by both sides, kept for timing.

A launch-bound forward (an LSTM's thousands of small kernels, a small CNN) runs as fast as the core that
launches it, and on a virtual machine one core's speed changes over seconds (measured on an H100 host:
whole rounds 1.3-1.7x slower than others on the same core, in streaks). Left to the scheduler, the two
sides of a comparison meet such streaks at different times and an identity kernel read 0.62-1.24x eager;
with each side's timing thread on the same core for its rounds (they alternate, so never at once), and
everything else of the batch kept off that core, 10 of 11 runs read within 2 % (bench/timing_core_pinning.py).

EVALUATOR_TIMING_CPU: a CPU number to use, or "none" to leave placement to the scheduler. By default a GPU
host keeps its last cores for timing, one per GPU (the worker of GPU i, by CUDA_VISIBLE_DEVICES, takes the
i-th from the end); a host with too few cores pins nothing, and so does the CPU device unless the
variable names a core.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from evaluator.trusted.settings import SettingsError

logger = logging.getLogger(__name__)

NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")
# Fewer CPUs than this per GPU and the batch's other work (builds, booting children) would have too few left.
MIN_CPUS_PER_GPU = 4


def gpus_on_host() -> int:
    """How many NVIDIA GPUs the host has (every worker on it reserves the same cores), at least 1."""
    try:
        return max(1, len(list(NVIDIA_GPUS.iterdir())))
    except OSError:
        return 1


def gpu_index() -> int:
    """This worker's GPU: the first of CUDA_VISIBLE_DEVICES where it is a number, else 0."""
    first = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


def chosen_cpus(allowed: list[int], gpus: int, index: int) -> tuple[int | None, set[int]]:
    """(this worker's timing CPU, every worker's reserved CPUs) from the CPUs this process may use."""
    override = os.environ.get("EVALUATOR_TIMING_CPU", "").strip().lower()
    if override == "none":
        return None, set()
    if override:
        if not override.isdigit() or int(override) not in allowed:
            known = f"is not one of this process's CPUs {allowed}"
            raise SettingsError(f"EVALUATOR_TIMING_CPU={override!r} {known}")
        return int(override), {int(override)}
    if len(allowed) < MIN_CPUS_PER_GPU * gpus:
        return None, set()
    reserved = allowed[-gpus:]
    return allowed[-1 - index % gpus], set(reserved)


def reserve_timing_cpu(device: str) -> int | None:
    """On a GPU: this thread (and every thread and process it starts later) kept off the timing cores, and
    this worker's timing core returned; None (nothing changed) where cores are too few, and on the CPU
    device unless EVALUATOR_TIMING_CPU names a core."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    if device != "cuda" and not os.environ.get("EVALUATOR_TIMING_CPU", "").strip():
        return None  # the CPU device pins only where asked (the tests of the pinning do)
    allowed = sorted(os.sched_getaffinity(0))
    cpu, reserved = chosen_cpus(allowed, gpus_on_host(), gpu_index())
    if cpu is None:
        return None
    os.sched_setaffinity(0, set(allowed) - reserved)
    others = len(allowed) - len(reserved)
    logger.info("timed calls on CPU %d; the batch's other work on %d other CPUs", cpu, others)
    return cpu
