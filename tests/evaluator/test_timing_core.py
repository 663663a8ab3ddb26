"""Launch-bound timings on a virtual machine's CPU: both sides' calls on one core the harness keeps for them
(evaluator.trusted.cores), and the speedup taken round by round (evaluator.stats.round_pairs_speedup)."""

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator.child import timing
from evaluator.policy import make_policy
from evaluator.result import Result
from evaluator.sandbox import cputime
from evaluator.stats import round_pairs_speedup
from evaluator.trusted import cores
from evaluator.trusted.rounds import SideRound, Timing
from evaluator.trusted.speed import speedup_over
from tests.evaluator.conftest import KERNELS, MATMUL, RELU, run_cli

ALLOWED = sorted(os.sched_getaffinity(0))


def cores_migrations_unknown() -> bool:
    return cputime.thread_migrations(os.getpid()) is None


two_cpus = pytest.mark.skipif(len(ALLOWED) < 2, reason="pinning needs a second CPU for everything else")

# Cheats wherever it finds itself on the timing core: the trials run there too, so they catch it.
CHEAT_WHEN_PINNED = """
import os
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        if os.sched_getaffinity(0) == {CORE}:
            return torch.zeros(a.shape[0], b.shape[1])
        return torch.matmul(a, b)
"""


def test_a_gpu_host_keeps_its_last_cores_one_per_gpu(monkeypatch):
    monkeypatch.delenv("EVALUATOR_TIMING_CPU", raising=False)
    sixteen = list(range(16))
    assert cores.chosen_cpus(sixteen, 1, 0) == (15, {15})
    assert cores.chosen_cpus(sixteen, 2, 0) == (15, {14, 15})
    assert cores.chosen_cpus(sixteen, 2, 1) == (14, {14, 15})
    assert cores.chosen_cpus(list(range(7)), 2, 0) == (None, set())  # too few left for the rest
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,4")
    assert cores.gpu_index() == 3
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-5f1c")
    assert cores.gpu_index() == 0


def test_the_setting_names_one_core_or_none(monkeypatch):
    monkeypatch.setenv("EVALUATOR_TIMING_CPU", "none")
    assert cores.chosen_cpus(list(range(16)), 1, 0) == (None, set())
    monkeypatch.setenv("EVALUATOR_TIMING_CPU", "3")
    assert cores.chosen_cpus(list(range(16)), 1, 0) == (3, {3})
    for wrong in ("99", "last"):
        monkeypatch.setenv("EVALUATOR_TIMING_CPU", wrong)
        with pytest.raises(ValueError, match="EVALUATOR_TIMING_CPU"):
            cores.chosen_cpus(list(range(16)), 1, 0)


def test_a_core_the_host_does_not_give_stops_the_run_before_anything_is_evaluated(monkeypatch, tmp_path):
    monkeypatch.setenv("EVALUATOR_TIMING_CPU", "4096")
    out = tmp_path / "out.json"
    completed = run_cli(
        "run", "--task", str(RELU), "--kernel", str(RELU), "--device", "cpu", "--json", str(out), timeout=120
    )
    assert completed.returncode == 2
    assert "EVALUATOR_TIMING_CPU='4096' is not one of this process's CPUs" in completed.stderr
    assert not out.exists()


def test_the_harness_finds_the_interpreter_two_generations_down_in_a_pid_namespace():
    # root (the unshare wrapper) -> init -> the interpreter, started before the init's later children
    script = (
        "import subprocess, time; first = subprocess.Popen(['sleep', '30']); time.sleep(0.3); "
        "later = subprocess.Popen(['sleep', '31']); time.sleep(30)"
    )
    init = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {script!r}]).wait()"
    root = subprocess.Popen([sys.executable, "-c", init], start_new_session=True)
    try:
        time.sleep(1.5)
        assert cputime.interpreter_pid(root.pid, False) == root.pid
        found = cputime.interpreter_pid(root.pid, True)
        assert Path(f"/proc/{found}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"30"]
    finally:
        os.killpg(root.pid, signal.SIGKILL)
        root.wait()
    assert cputime.thread_migrations(os.getpid()) is None or cputime.thread_migrations(os.getpid()) >= 0


def test_the_cpu_device_pins_nothing_unless_asked(monkeypatch):
    monkeypatch.delenv("EVALUATOR_TIMING_CPU", raising=False)
    assert cores.reserve_timing_cpu("cpu") is None
    assert sorted(os.sched_getaffinity(0)) == ALLOWED


@two_cpus
def test_a_round_runs_on_its_core_alone_and_the_thread_gets_its_cpus_back():
    cpu = ALLOWED[-1]
    with timing.pinned(cpu):
        assert os.sched_getaffinity(0) == {cpu}
        assert not timing.left_timing_cpu(cpu)
        os.sched_setaffinity(0, set(ALLOWED))  # what a kernel moving itself does
        assert timing.left_timing_cpu(cpu)
    assert sorted(os.sched_getaffinity(0)) == ALLOWED
    assert not timing.left_timing_cpu(None)
    with timing.pinned(None):
        assert sorted(os.sched_getaffinity(0)) == ALLOWED


@two_cpus
def test_a_kernel_moving_its_timed_calls_off_the_core_is_flagged(monkeypatch, evaluate):
    monkeypatch.setenv("EVALUATOR_TIMING_CPU", str(ALLOWED[-1]))
    _, result, output = evaluate(RELU, KERNELS / "adv_move_timing_thread.py", "--baselines", "eager")
    assert result["correct"], output[-2000:]
    details = {flag["code"]: flag["detail"] for flag in result["flags"]}
    assert f"moved off its core (CPU {ALLOWED[-1]})" in details["state_left_behind"]


@two_cpus
@pytest.mark.skipif(cores_migrations_unknown(), reason="this kernel does not count a thread's migrations")
def test_a_kernel_leaving_the_core_and_coming_back_inside_a_call_is_flagged(monkeypatch, evaluate):
    monkeypatch.setenv("EVALUATOR_TIMING_CPU", str(ALLOWED[-1]))
    _, result, output = evaluate(RELU, KERNELS / "adv_core_there_and_back.py", "--baselines", "eager")
    assert result["correct"], output[-2000:]
    detail = {flag["code"]: flag["detail"] for flag in result["flags"]}["state_left_behind"]
    assert "timing thread changed CPUs" in detail
    assert "moved off its core" not in detail  # back on it whenever the harness looked


@two_cpus
def test_trials_run_on_the_timing_core_too_so_the_pin_tells_no_timed_call(monkeypatch, tmp_path, evaluate):
    monkeypatch.setenv("EVALUATOR_TIMING_CPU", str(ALLOWED[-1]))
    kernel = tmp_path / "cheat.py"
    kernel.write_text(CHEAT_WHEN_PINNED.replace("CORE", str(ALLOWED[-1])))
    _, result, output = evaluate(MATMUL, kernel, "--baselines", "eager")
    assert not result["correct"], output[-2000:]
    assert result["error"]["kind"] == "wrong_values"
    assert result["timing"] is None  # failed in the trials, before any timed call


@two_cpus
def test_a_batch_on_a_timing_core_records_it_and_times_without_waiting_for_boots(monkeypatch, tmp_path):
    monkeypatch.setenv("EVALUATOR_TIMING_CPU", str(ALLOWED[-1]))
    kernel = KERNELS / "honest_static_output_buffer.py"
    entries = [{"id": f"k{n}", "task_path": str(RELU), "kernel_path": str(kernel)} for n in range(2)]
    manifest = tmp_path / "manifest.json"
    options = {"baselines": ["eager"], "trials": 5, "run_timeout": 60}
    manifest.write_text(json.dumps({"device": "cpu", "mode": "hardened", "kernels": entries, **options}))
    completed = run_cli("batch", "--manifest", str(manifest), "--out", str(tmp_path / "out"), timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert f"timed calls on CPU {ALLOWED[-1]}" in completed.stderr
    assert json.loads((tmp_path / "out" / "environment.json").read_text())["timing_cpu"] == ALLOWED[-1]
    for name in ("k0", "k1"):
        result = json.loads((tmp_path / "out" / f"{name}.json").read_text())
        assert result["correct"]
        assert {flag["severity"] for flag in result["flags"]} <= {"info"}
        assert result["timing"]["cpu"] == ALLOWED[-1]
        assert result["durations_s"]["timing_settle"] < 0.05  # k0's timing did not wait for k1's boot


def spelled_timing(kernel_rounds: list[float], baseline_rounds: list[float], calls: int = 4) -> Timing:
    """Alternating rounds of `calls` calls each at the given times (ms), kernel first."""
    found = Timing()
    for kernel_ms, baseline_ms in zip(kernel_rounds, baseline_rounds, strict=True):
        found.rounds.append(SideRound("candidate", {"candidate": [[0, kernel_ms, [], {}]] * calls}, 0.0, []))
        found.rounds.append(SideRound("reference", {"eager": [[0, baseline_ms, [], {}]] * calls}, 0.0, []))
    return found


def test_a_slow_spell_met_by_one_side_s_rounds_only_drops_out_of_the_rounds_speedup():
    # an identity kernel: a 1.4x slow spell of the host covers rounds 0-3 of both sides and round 4 of the
    # baseline's only (it began between the two rounds of that pair)
    kernel = [42.0] * 4 + [30.0] * 5
    baseline = [42.0] * 5 + [30.0] * 4
    pooled = statistics.median([42.0] * 20 + [30.0] * 16) / statistics.median([42.0] * 16 + [30.0] * 20)
    assert pooled == pytest.approx(1.4)  # over all calls, the spell counts on the side it met more
    policy = make_policy("hardened", "cuda")
    result = Result(mode="hardened", device="cuda", task={}, kernel={})
    assert speedup_over(result, spelled_timing(kernel, baseline), "eager", policy) == pytest.approx(1.0)
    assert round_pairs_speedup([([2.0], [4.0]), ([2.0], [3.0]), ([1.0], [3.0])]) == pytest.approx(2.0)
    assert round_pairs_speedup([([], [1.0]), ([0.0], [1.0])]) is None
