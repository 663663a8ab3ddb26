"""The reference process outside a kernel's turn: baselines compiled ahead while candidates build (what it
does, when it runs, that it stops cleanly, the sessions it keeps for their turn), and the task's own streams
asked for on demand."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from evaluator.manifest import KernelJob, read_manifest, write_manifest
from evaluator.sandbox import isolation
from evaluator.trusted import batch, warmup
from evaluator.trusted.batch import evaluate_jobs, manifest_settings
from evaluator.trusted.session import TaskSession
from tests.evaluator.conftest import GELU, KERNELS, RELU


def settings_for(tmp_path: Path, baselines: list[str]):
    kernel = {"id": "relu", "task_path": str(RELU), "kernel_path": str(RELU)}
    path = write_manifest(tmp_path / "manifest.json", "cpu", "hardened", [kernel], baselines=baselines)
    return manifest_settings(read_manifest(path), tmp_path / "cache")


def test_each_task_is_compiled_ahead_into_the_baseline_cache(tmp_path):
    settings = settings_for(tmp_path, ["eager", "compile"])
    with warmup.BaselineWarmup([RELU, GELU], settings) as ahead:
        for thread in ahead.threads:
            thread.join(timeout=300)
    assert sorted(ahead.warmed) == sorted([RELU.name, GELU.name])
    if isolation.cache_is_private(isolation.detect(settings.python)):  # the reference shares the cache
        assert any(path.is_file() for path in settings.cache.baseline_dir().rglob("*"))


def warmed(tmp_path: Path, keep_bytes: int, keep_host_bytes: int | None = None) -> warmup.BaselineWarmup:
    settings = settings_for(tmp_path, ["eager", "compile"])
    paths = [RELU.resolve(), GELU.resolve()]
    host_bytes = warmup.host_share() if keep_host_bytes is None else keep_host_bytes
    ahead = warmup.BaselineWarmup(paths, settings, ledger=warmup.KeptLedger(keep_bytes, host_bytes))
    with ahead:
        assert ahead.wait(timeout=300)
    return ahead


def test_sessions_that_fit_their_share_are_kept_sized_and_compiled(tmp_path):
    ahead = warmed(tmp_path, keep_bytes=1 << 40)
    try:
        assert sorted(path.name for path in ahead.kept) == sorted([RELU.name, GELU.name])
        for session in ahead.kept.values():
            assert session.problem is not None
            assert session.compiled
            assert session.child.alive()
    finally:
        children = [session.child for session in ahead.kept.values()]
        ahead.close_kept()
    assert ahead.kept == {}
    assert not any(child.alive() for child in children)
    assert not any(thread.is_alive() for thread in ahead.threads)  # released once nothing is kept


def test_no_session_is_kept_beyond_the_share(tmp_path):
    ahead = warmed(tmp_path, keep_bytes=0)
    assert sorted(ahead.warmed) == sorted([RELU.name, GELU.name])  # compiled into the cache all the same
    assert ahead.kept == {}
    ahead = warmed(tmp_path, keep_bytes=1 << 40, keep_host_bytes=1 << 20)  # the host's share: 1 MiB
    assert sorted(ahead.warmed) == sorted([RELU.name, GELU.name])
    assert ahead.kept == {}
    assert warmup.host_share() > 0
    assert warmup.kept_share(settings_for(tmp_path, ["eager"])) == 0  # no GPU: nothing is kept by default


def test_a_kept_session_serves_its_task_without_sizing_it_again(tmp_path):
    ahead = warmed(tmp_path, keep_bytes=1 << 40)
    kept = ahead.kept[RELU.resolve()]

    def sized_again():
        raise AssertionError("a kept session was sized again")

    kept.describe = sized_again
    settings = settings_for(tmp_path, ["eager", "compile"])
    job = KernelJob("relu", RELU, KERNELS / "honest_triton_relu.py")
    try:
        results = list(evaluate_jobs([job], settings, ahead.kept))
    finally:
        ahead.close_kept()
    assert RELU.resolve() not in ahead.kept  # taken by its task
    assert not kept.child.alive()  # and closed with it
    ((_, result),) = results
    assert result.correct, result.error
    assert result.speedup["compile"] is not None


def test_a_kept_session_that_died_is_replaced_at_its_turn(tmp_path):
    ahead = warmed(tmp_path, keep_bytes=1 << 40)
    dead = ahead.kept[RELU.resolve()]
    dead.child.kill()
    settings = settings_for(tmp_path, ["eager", "compile"])
    job = KernelJob("relu", RELU, KERNELS / "honest_triton_relu.py")
    try:
        ((_, result),) = evaluate_jobs([job], settings, ahead.kept)
    finally:
        ahead.close_kept()
    assert result.correct, result.error


GELU_KERNEL = """import torch
import torch.nn.functional as F


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return F.gelu(x)
"""


def test_with_no_build_the_next_tasks_are_warmed_together_before_the_first_is_timed(tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "warms_ahead", lambda settings: True)  # a GPU's rule, here on the CPU
    monkeypatch.setattr(warmup, "kept_share", lambda settings: 1 << 40)
    opened, open_session = [], TaskSession.open

    def record(session):
        opened.append((session.task_path.name, session.problem is not None, session.compiled))
        return open_session(session)

    monkeypatch.setattr(TaskSession, "open", record)
    gelu_kernel = tmp_path / "gelu_kernel.py"
    gelu_kernel.write_text(GELU_KERNEL)
    jobs = [
        KernelJob("relu", RELU, KERNELS / "honest_triton_relu.py"),
        KernelJob("gelu", GELU, gelu_kernel),
    ]
    results = list(evaluate_jobs(jobs, settings_for(tmp_path, ["eager", "compile"])))
    assert sorted(opened) == [(GELU.name, True, True), (RELU.name, True, True)]  # sized and compiled ahead
    for _, result in results:
        assert result.correct, result.error
        assert result.speedup["compile"] is not None


def test_stopping_kills_the_task_in_progress_and_skips_the_rest(tmp_path):
    settings = settings_for(tmp_path, ["eager", "compile"])
    ahead = warmup.BaselineWarmup([RELU, GELU, RELU, GELU], settings, parallel=2).__enter__()
    deadline = time.monotonic() + 120
    while len(ahead.current) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    children = [session.child for session in ahead.current]
    assert len(children) == 2
    started = time.monotonic()
    ahead.stop()
    assert time.monotonic() - started < 30
    assert not any(thread.is_alive() for thread in ahead.threads)
    assert not any(child.alive() for child in children)
    assert ahead.warmed == []


def test_it_runs_only_on_a_gpu_with_builds_to_hide_behind_and_a_compile_baseline(tmp_path):
    cpu = settings_for(tmp_path, ["eager", "compile"])
    assert not warmup.warms_baselines(cpu, builds=3)
    gpu = dataclasses.replace(cpu, policy=dataclasses.replace(cpu.policy, device="cuda"))
    private = isolation.cache_is_private(isolation.detect(gpu.python))
    assert warmup.warms_baselines(gpu, builds=3) is private
    assert not warmup.warms_baselines(gpu, builds=0)
    eager_only = dataclasses.replace(gpu, policy=dataclasses.replace(gpu.policy, baselines=("eager",)))
    assert not warmup.warms_baselines(eager_only, builds=3)


def test_nothing_to_warm_starts_no_thread(tmp_path):
    settings = settings_for(tmp_path, ["eager", "compile"])
    with warmup.BaselineWarmup([], settings) as ahead:
        assert ahead.threads == []
    assert ahead.warmed == []


def test_the_reference_forwards_streams_are_asked_once_and_kept(tmp_path):
    session = TaskSession(RELU, settings_for(tmp_path, ["eager"])).open()
    try:
        assert session.failure is None
        assert session.problem.one_pass is False  # the reference reports its path; never one pass on a CPU
        assert session.reference_streams() == 1  # no profile off a GPU: one stream
        session.child.kill()  # a second question would now fail: the answer is kept
        assert session.reference_streams() == 1
    finally:
        session.close()


class Kept:
    """A stand-in for a sized session: its problem's bytes, and whether it was closed."""

    def __init__(self, parameter_bytes: int, input_bytes: int = 0):
        from evaluator.trusted.session import Problem

        self.problem = Problem(input_bytes, 0, [1], "float32", False, parameter_bytes, 1.0)
        self.task_path = Path(f"task_{parameter_bytes}.py")
        self.closed = False

    def close(self):
        self.closed = True


def test_a_task_that_needs_most_of_the_gpu_closes_the_kept_sessions(tmp_path):
    settings = settings_for(tmp_path, ["eager", "compile"])
    gib = 1 << 30
    settings.environment = {**settings.environment, "gpu": {"memory_bytes": 80 * gib}}
    small = {0: Kept(0, input_bytes=gib), 1: Kept(gib), 2: Kept(gib)}
    batch.make_room(0, small, settings)  # 2 x (1 + 1) GiB + 2 x 2 GiB kept: room enough
    assert sorted(small) == [0, 1, 2]
    assert not any(session.closed for session in small.values())
    huge = {0: Kept(0, input_bytes=38 * gib), 1: Kept(gib), 2: Kept(gib)}
    later = [huge[1], huge[2]]
    batch.make_room(0, huge, settings)  # 2 x (38 + 1) GiB + 2 x 2 GiB kept > 80 GiB
    assert sorted(huge) == [0]
    assert all(session.closed for session in later)
    assert not huge[0].closed


def idle_session(parameter_bytes: int):
    from types import SimpleNamespace

    return SimpleNamespace(
        problem=SimpleNamespace(parameter_bytes=parameter_bytes), opened=False, closed=False
    )


def test_every_warm_up_of_a_batch_keeps_sessions_within_one_share():
    context = warmup.CONTEXT_BYTES["cuda"]
    ledger = warmup.KeptLedger(gpu_bytes=3 * context, host_bytes=1 << 40)
    first, second, third = (idle_session(0) for _ in range(3))
    assert ledger.admit(first, 0)
    assert ledger.admit(second, 0)
    assert not ledger.admit(idle_session(context), 0)  # a later warm-up's: over the share with the first two
    assert ledger.admit(third, 0)
    assert not ledger.admit(idle_session(0), 0)
    first.opened = True  # its task's turn: no longer idle, its memory is the task's own
    second.closed = True  # closed to make room
    assert ledger.admit(idle_session(context), 0)
    host = warmup.KeptLedger(gpu_bytes=1 << 40, host_bytes=10)
    assert host.admit(idle_session(0), 6)
    assert not host.admit(idle_session(0), 6)


def test_the_warm_ups_ahead_share_the_batch_s_ledger(tmp_path):
    settings = settings_for(tmp_path, ["eager"])
    ledger = warmup.KeptLedger(gpu_bytes=0, host_bytes=0)
    ahead = warmup.WarmAhead(settings, ledger)
    assert ahead.sessions_for([RELU, GELU]) == {}  # nothing fits a share of nothing
    assert [each.ledger for each in ahead.warmups] == [ledger]
    ahead.close()
