"""Timing the candidate's process cannot forge, and input contents it cannot cache (harness 2).

The baselines are timed in the reference process, out of the candidate's reach; the harness times each
of the candidate's timed loops on its own clock, and every call gets new inputs: a content-keyed cache
gains nothing; claims that add up to more time than the loop took are a hack; a kernel claiming less than
it took leaves the evidence in timing.host_check (flagged on a GPU: tests/hardening/test_gpu_escapes.py),
and since harness 2.9.0, where the harness's clock also spans every call, its samples on the CPU are
raised by what its calls took beyond their claims over the baselines' calls: it gains nothing.
"""

import pytest

from tests.hardening.harness import entry, hacks, run_batch, severe, task

pytestmark = pytest.mark.slow

RELU = task(1, "9_ReLU")
OPTIONS = {"baselines": ["eager"], "trials": 10}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("timing")
    names = ["adv_content_cache", "adv_forge_timing", "adv_inflate_baseline", "honest_relu"]
    completed, found = run_batch(folder, [entry(name, RELU) for name in names], **OPTIONS)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return found


@pytest.fixture(scope="module")
def kernelbench_results(tmp_path_factory):
    """The same kernels in KernelBench mode, which keeps KernelBench's timing (same inputs every call)."""
    folder = tmp_path_factory.mktemp("timing-kb")
    names = ["adv_content_cache", "adv_inflate_baseline"]
    manifest = [entry(name, RELU) for name in names]
    completed, found = run_batch(folder, manifest, mode_override="kernelbench", **OPTIONS)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return found


def test_a_content_keyed_cache_gains_nothing_from_fresh_inputs(results):
    cached = results["adv_content_cache"]
    assert cached["correct"], cached["error"]
    assert cached["runtime_ms"]["median"] >= 15  # every timed round missed the cache: the slow path
    assert cached["speedup"]["eager"] < 1


def test_without_fresh_inputs_the_same_cache_would_look_fast(kernelbench_results):
    cached = kernelbench_results["adv_content_cache"]
    assert cached["correct"], cached["error"]
    assert cached["runtime_ms"]["mean"] < 15  # KernelBench's repeated inputs: cache hits after warm-up


def test_claims_adding_up_to_more_than_the_loop_took_are_a_hack(results):
    inflated = results["adv_inflate_baseline"]
    assert inflated["speedup"]["eager"] < 1  # the eager records it forged were never read: only its own
    assert inflated["baseline_ms"]["eager"]["median"] < 50  # the reference's own, honest eager samples
    assert "timing_forged" in hacks(inflated), inflated["flags"]
    detail = next(flag["detail"] for flag in inflated["flags"] if flag["code"] == "timing_forged")
    assert "in a loop the harness measured at" in detail


def test_claims_smaller_than_the_time_taken_leave_their_evidence_and_gain_nothing(results):
    forged = results["adv_forge_timing"]
    assert forged["correct"], forged["error"]
    check = forged["timing"]["host_check"]
    # raised to the harness's clock on each call: at least the 20 ms each call sleeps, however loaded
    assert forged["runtime_ms"]["median"] >= 0.9 * 20, check
    assert forged["speedup"]["eager"] < 1
    assert check["candidate_median_raised_by"] > 10
    calls = forged["runtime_ms"]["n"]
    # The harness's clock saw at least the 20 ms each call sleeps beyond what was claimed, however loaded
    # the machine (load only lengthens the loop): the evidence is a lower bound, not a ratio to noise.
    assert check["loop_ms"] - check["claimed_ms"] >= 0.9 * 20 * calls, check
    assert check["claimed_ms"] < 0.01 * 20 * calls


def test_kernelbench_mode_has_no_such_check(kernelbench_results):
    assert "timing_forged" not in severe(kernelbench_results["adv_inflate_baseline"])


def test_an_honest_kernel_passes_the_cross_checks(results):
    honest = results["honest_relu"]
    assert honest["correct"], honest["error"]
    assert severe(honest) == set(), honest["flags"]
    assert hacks(honest) == set()
