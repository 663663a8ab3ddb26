"""A manifest: CUDA candidates built in parallel in the background, the kernels evaluated task by task.

Kernels are grouped by task (in the manifest's order of first appearance, tasks with nothing to build
first); each task gets one reference process for all its kernels. Builds are queued in evaluation order, so
evaluation starts as soon as the first kernel's build is done; while a kernel waits for its build, its
task's reference process sizes the problem, calibrates and compiles the torch.compile baseline. On a GPU the
next kernel's child (and the next task's reference process) is started while the current kernel runs, so
their interpreters are up when their turn comes; they touch the device only then. Each result is written
atomically the moment it is known, so a killed batch resumes where it stopped.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evaluator.manifest import (
    LIMIT_KEYS,
    POLICY_KEYS,
    TIMEOUT_KEYS,
    KernelJob,
    Manifest,
    ManifestError,
    read_manifest,
)
from evaluator.policy import make_policy
from evaluator.result import Result, writable, write_json_atomic
from evaluator.sandbox.report import sandbox_report
from evaluator.trusted.builds import Builds, harness_failure, needs_build
from evaluator.trusted.compile_cache import CompileCache
from evaluator.trusted.conversation import Stop
from evaluator.trusted.environment import collect, cuda_arch_list
from evaluator.trusted.evaluate import Launch, evaluate_kernel
from evaluator.trusted.session import TaskSession
from evaluator.trusted.settings import Settings

logger = logging.getLogger(__name__)
MiB = 1 << 20


def default_cache_dir() -> Path:
    root = os.environ.get("EVALUATOR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "kb-evaluator"
    )
    return Path(root)


def policy_options(options: dict[str, Any]) -> dict[str, Any]:
    values = {key: options[key] for key in POLICY_KEYS if key in options}
    if "baselines" in values:
        values["baselines"] = tuple(values["baselines"])
    return values


def manifest_settings(manifest: Manifest, cache_dir: Path | None) -> Settings:
    """The settings a manifest asks for; ManifestError for a bad option."""
    try:
        policy = make_policy(manifest.mode, manifest.device, **policy_options(manifest.options))
        timeouts = {key: float(manifest.options[key]) for key in TIMEOUT_KEYS if key in manifest.options}
        limits = {key: int(manifest.options[key]) for key in LIMIT_KEYS if key in manifest.options}
    except (TypeError, ValueError) as error:
        raise ManifestError(f"bad manifest option: {error}") from error
    slot_mb = limits.pop("slot_mb", None)
    python = os.environ.get("EVALUATOR_CHILD_PYTHON") or sys.executable
    settings = Settings(
        policy=policy,
        cache=CompileCache(cache_dir or default_cache_dir()),
        arch_list=cuda_arch_list() if manifest.device == "cuda" else None,
        python=python,
        **timeouts,
        **limits,
    )
    if slot_mb:
        settings.slot_bytes = max(1, slot_mb) * MiB
    settings.environment = collect(manifest.device, sandbox_report(settings.limits(), python))
    return settings


def by_task(jobs: list[KernelJob]) -> list[tuple[Path, list[KernelJob]]]:
    """Kernels grouped by task, in order of first appearance."""
    groups: dict[Path, list[KernelJob]] = {}
    for job in jobs:
        groups.setdefault(job.task_path.resolve(), []).append(job)
    return list(groups.items())


def evaluation_order(jobs: list[KernelJob], settings: Settings) -> list[KernelJob]:
    """Task by task, the tasks with no kernel to build first (they run while the builds do)."""
    groups = by_task(jobs)
    groups.sort(key=lambda item: any(needs_build(job, settings) for job in item[1]))
    return [job for _, group in groups for job in group]


def evaluate_jobs(
    jobs: list[KernelJob], settings: Settings, builds: Builds
) -> Iterator[tuple[KernelJob, Result]]:
    """Each job's result, task by task, one reference process per task (started ahead when overlapped).

    A kernel whose build failed is skipped (the build wrote its result). However it ends (SIGTERM unwinds
    it too), every child it started is killed and every temp dir removed.
    """
    groups = by_task(jobs)
    sessions: dict[int, TaskSession] = {}
    launches: dict[str, Launch] = {}
    order = [(index, job) for index, (_, group) in enumerate(groups) for job in group]
    try:
        for position, (index, job) in enumerate(order):
            session = sessions.get(index) or sessions.setdefault(
                index, TaskSession(groups[index][0], settings)
            )
            if not session.opened:
                session.open()
            if not await_build(builds, job, session):
                launch = launches.pop(job.id, None)
                if launch is not None:
                    launch.close()
            else:
                launch = launches.pop(job.id, None) or Launch(
                    job.kernel_path, job.task_path, job.source, settings
                )
                if settings.overlapped and position + 1 < len(order):
                    prestart(order[position + 1], groups, sessions, launches, settings, builds)
                yield job, evaluate_one(session, launch, job, settings)
            if position + 1 == len(order) or order[position + 1][0] != index:
                sessions.pop(index).close()
    finally:
        for launch in launches.values():
            launch.close()
        for session in sessions.values():
            session.close()


def await_build(builds: Builds, job: KernelJob, session: TaskSession) -> bool:
    """Wait for the kernel's build, compiling the task's torch.compile baseline first; False: it failed."""
    if builds.pending(job) and session.failure is None and session.unfit is None:
        try:
            session.ensure_compiled()
        except Stop as stop:  # the kernel's timing asks again and fails as it would have without this
            logger.warning("task %s: the baseline did not compile ahead: %s", session.task_path, stop.message)
    return builds.ready(job)


def prestart(
    nxt: tuple[int, KernelJob], groups, sessions: dict, launches: dict, settings: Settings, builds: Builds
) -> None:
    """Start the next kernel's child (once built) and the next task's reference process, ahead."""
    index, job = nxt
    try:
        if index not in sessions:
            sessions[index] = TaskSession(groups[index][0], settings)
            sessions[index].start()
        if not builds.pending(job):
            launches[job.id] = Launch(job.kernel_path, job.task_path, job.source, settings).start()
    except Exception:  # noqa: BLE001 - the child is then started at its turn
        logger.exception("could not start the next child ahead of its turn")


def evaluate_one(session: TaskSession, launch: Launch, job: KernelJob, settings: Settings) -> Result:
    """One kernel's result; a failure of the harness itself is that kernel's harness_error, the rest go on."""
    try:
        return writable(evaluate_kernel(session, launch, settings))
    except Exception:  # noqa: BLE001
        logger.exception("harness error while evaluating %s", job.kernel_path)
        return harness_failure(job, settings, traceback.format_exc()[-6000:])


def run_batch(
    manifest_path: Path,
    out_dir: Path,
    workers: int | None,
    cache_dir: Path | None,
    compile_only: bool = False,
) -> int:
    """Evaluate a manifest into out_dir (builds beside evaluation); 0 when every kernel has a result file.

    With compile_only, build the CUDA candidates into the cache and stop: 0 when every build succeeded
    (a failed build still gets its result file), so a later batch on the same cache starts evaluating at once.
    """
    manifest = read_manifest(manifest_path)
    settings = manifest_settings(manifest, cache_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out_dir / "environment.json", settings.environment)
    pending = [job for job in manifest.kernels if not (out_dir / f"{job.id}.json").exists()]
    logger.info("%d of %d kernel(s) to evaluate", len(pending), len(manifest.kernels))
    pending = evaluation_order(pending, settings)  # builds are queued in the order they are needed
    builds = Builds(pending, settings, workers or os.cpu_count() or 1, out_dir)
    try:
        if compile_only:
            failed = builds.failed()
            logger.info("compile only: %d build(s) failed", len(failed))
            return 1 if failed else 0
        for job, result in evaluate_jobs(pending, settings, builds):
            write_json_atomic(out_dir / f"{job.id}.json", result.to_dict())
            logger.info("%s: %s", job.id, result.summary())
    finally:
        builds.close()
    missing = [job.id for job in manifest.kernels if not (out_dir / f"{job.id}.json").exists()]
    return 1 if missing else 0
