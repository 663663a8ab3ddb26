"""The reference process outside a kernel's turn: baselines compiled ahead while candidates build (what it
does, when it runs, that it stops cleanly), and the task's own streams asked for on demand."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from evaluator.manifest import read_manifest, write_manifest
from evaluator.sandbox import isolation
from evaluator.trusted import warmup
from evaluator.trusted.batch import manifest_settings
from evaluator.trusted.session import TaskSession
from tests.evaluator.conftest import GELU, RELU


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
