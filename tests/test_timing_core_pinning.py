"""bench/timing_core_pinning.py's readings of the host: the CPU a thread last ran on, a core's siblings."""

import os

from bench import timing_core_pinning


def test_the_cpu_a_thread_ran_on_is_one_it_may_use():
    allowed = os.sched_getaffinity(0)
    assert timing_core_pinning.current_cpu() in allowed
    cpu = max(allowed)
    os.sched_setaffinity(0, {cpu})
    try:
        assert timing_core_pinning.current_cpu() == cpu
    finally:
        os.sched_setaffinity(0, allowed)


def test_a_core_is_among_its_own_siblings():
    cpu = max(os.sched_getaffinity(0))
    assert cpu in timing_core_pinning.siblings(cpu)
