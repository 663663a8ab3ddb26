"""A manifest: build every CUDA candidate in parallel, then evaluate the kernels task by task.

While the candidates build, the tasks' reference processes are sized and their torch.compile baselines
compiled ahead of their turn (evaluator.trusted.warmup), and those that fit one batch-wide share of the
GPU's and the host's memory stay up to serve their task; nothing is timed until the builds, and with them
that, are over. With no build to hide behind, the next tasks are warmed together at the first one's turn,
before it is timed.

Kernels are grouped by task (in the manifest's order of first appearance); each task gets one reference
process for all its kernels. On a GPU the next kernel's child (and the next task's reference process) is
started while the current kernel runs (the first kernel's while the other candidates build, once its own
build is done), so their interpreters are up when their turn comes; they touch the device only then, and the
current kernel's timing waits until they have booted, so nothing else loads the host while it is timed. Each
result is written atomically the moment it is known, so a killed batch resumes where it stopped.
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
from evaluator.sandbox.remembered import cache_root
from evaluator.sandbox.report import sandbox_report
from evaluator.trusted.builds import build_done, builds_to_do, harness_failure, precompile
from evaluator.trusted.compile_cache import CompileCache
from evaluator.trusted.cores import reserve_timing_cpu
from evaluator.trusted.environment import collect, cuda_arch_list
from evaluator.trusted.evaluate import Launch, evaluate_kernel
from evaluator.trusted.session import TaskSession
from evaluator.trusted.settings import Settings
from evaluator.trusted.warmup import (
    AHEAD_TASKS,
    BaselineWarmup,
    KeptLedger,
    WarmAhead,
    kept_bytes,
    warms_ahead,
    warms_baselines,
)

logger = logging.getLogger(__name__)
MiB = 1 << 20


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
        cache=CompileCache(cache_dir or cache_root()),
        arch_list=cuda_arch_list() if manifest.device == "cuda" else None,
        python=python,
        **timeouts,
        **limits,
    )
    if slot_mb:
        settings.slot_bytes = max(1, slot_mb) * MiB
    settings.environment = collect(manifest.device, sandbox_report(settings.limits(), python))
    if manifest.device == "cuda":
        settings.environment["cuda_allocator"] = settings.cuda_alloc_conf or "default"
    return settings


def by_task(jobs: list[KernelJob]) -> list[tuple[Path, list[KernelJob]]]:
    groups: dict[Path, list[KernelJob]] = {}
    for job in jobs:
        groups.setdefault(job.task_path.resolve(), []).append(job)
    return list(groups.items())


def evaluate_jobs(
    jobs: list[KernelJob],
    settings: Settings,
    ready: dict[Path, TaskSession] | None = None,
    launches: dict[str, Launch] | None = None,
    ledger: KeptLedger | None = None,
) -> Iterator[tuple[KernelJob, Result]]:
    """Each job's result, task by task, one reference process per task (started ahead when overlapped).

    `ready` holds sessions already sized and compiled (evaluator.trusted.warmup): a task found there takes
    its session out and uses it; `launches` holds kernels' children already started, by job id; `ledger`
    the memory the batch's idle kept sessions hold (every warm-up shares it). However it ends (SIGTERM
    unwinds it too), every child it started or took is killed and every temp dir removed.
    """
    groups = by_task(jobs)
    sessions = take_ready(groups, {} if ready is None else ready)
    launches = {} if launches is None else launches
    order = [(index, job) for index, (_, group) in enumerate(groups) for job in group]
    ahead = WarmAhead(settings, ledger) if warms_ahead(settings) else None

    def following(index: int) -> list[Path]:  # this task and the next ones, those with no session yet
        window = range(index, min(index + AHEAD_TASKS, len(groups)))
        return [groups[at][0] for at in window if at not in sessions]

    def starts_reference(index: int) -> bool:  # else that task's reference comes warmed with the next ones
        return ahead is None or not ahead.worth_it(following(index))

    try:
        if settings.overlapped and order:  # the first kernel's child boots while its task is sized
            prestart(order[0], groups, sessions, launches, settings, starts_reference(order[0][0]))
        for position, (index, job) in enumerate(order):
            if ahead is not None and index not in sessions:
                sessions.update(take_ready(groups, ahead.sessions_for(following(index)), sessions))
            session = sessions.get(index) or sessions.setdefault(
                index, TaskSession(groups[index][0], settings)
            )
            if not session.opened:
                session.open()
                make_room(index, sessions, settings)
            launch = launches.pop(job.id, None) or Launch(
                job.kernel_path, job.task_path, job.source, settings
            )
            booted_next = []
            if settings.overlapped and position + 1 < len(order):
                nxt = order[position + 1]
                prestart(nxt, groups, sessions, launches, settings, starts_reference(nxt[0]))
                booted_next = booting(nxt, sessions, launches)
            yield job, evaluate_one(session, launch, job, settings, booted_next)
            if position + 1 == len(order) or order[position + 1][0] != index:
                sessions.pop(index).close()
    finally:
        close_launches(launches)
        for session in sessions.values():
            session.close()
        if ahead is not None:
            ahead.close()


def make_room(index: int, sessions: dict[int, TaskSession], settings: Settings) -> None:
    """A task that needs more of the GPU than the sessions kept for later tasks leave free: those give their
    memory back (closed; their tasks start their reference again at their turn)."""
    session = sessions[index]
    gpu = int((settings.environment.get("gpu") or {}).get("memory_bytes") or 0)
    if session.problem is None or not gpu:
        return
    later = {at: other for at, other in sessions.items() if at != index and other.problem is not None}
    held = sum(kept_bytes(other) for other in later.values())
    if later and 2 * session.problem.process_bytes("cuda") + held > gpu:
        logger.info("%s needs most of the GPU: %d kept session(s) closed", session.task_path.name, len(later))
        for at, other in later.items():
            other.close()
            del sessions[at]


def take_ready(
    groups: list[tuple[Path, list[KernelJob]]], ready: dict[Path, TaskSession], have: dict | None = None
) -> dict:
    """The sessions sized ahead for these tasks, by task index (one whose process died, or whose task
    already has a session in `have`, is closed)."""
    sessions = {}
    for index, (path, _) in enumerate(groups):
        session = ready.pop(path, None)
        if session is not None and session.child.alive() and index not in (have or {}):
            sessions[index] = session
        elif session is not None:
            if not session.child.alive():
                logger.warning("the reference process kept for %s ended; it starts again", path.name)
            session.close()
    return sessions


def prestart(
    nxt: tuple[int, KernelJob], groups, sessions: dict, launches: dict, settings: Settings, reference: bool
) -> None:
    """Start the next kernel's child, and (`reference`) the next task's reference process, ahead of their
    turn."""
    index, job = nxt
    try:
        if reference and index not in sessions:
            sessions[index] = TaskSession(groups[index][0], settings)
            sessions[index].start()
        if job.id not in launches:  # the first kernel's may have started during the builds
            launches[job.id] = Launch(job.kernel_path, job.task_path, job.source, settings).start(ahead=True)
    except Exception:  # noqa: BLE001 - the child is then started at its turn
        logger.exception("could not start the next child ahead of its turn")


def booting(nxt: tuple[int, KernelJob], sessions: dict, launches: dict[str, Launch]) -> list:
    """The processes just started for the next kernel whose 'ready' nobody has read yet: the child, and the
    reference process where its task has not been opened (one sized ahead has long booted)."""
    index, job = nxt
    children = []
    launch = launches.get(job.id)
    if launch is not None and launch.started:
        children.append(launch.child)
    session = sessions.get(index)
    if session is not None and not session.opened and session.problem is None and hasattr(session, "child"):
        children.append(session.child)
    return children


def close_launches(launches: dict[str, Launch]) -> None:
    for launch in launches.values():
        launch.close()
    launches.clear()


class FirstChild:
    """The first kernel's child, booted while the other candidates build (the GPU idle, the CPUs busy):
    at once when it has nothing to build, else as soon as its own build is saved in the cache."""

    def __init__(self, pending: list[KernelJob], settings: Settings):
        self.settings = settings
        self.job = pending[0] if pending and settings.overlapped else None
        self.launches: dict[str, Launch] = {}

    def start_if_built(self, built: list[KernelJob] | None = None) -> None:
        job = self.job
        if job is None or job.id in self.launches:
            return
        if (job in built) if built is not None else build_done(job, self.settings):
            try:
                launch = Launch(job.kernel_path, job.task_path, job.source, self.settings)
                self.launches[job.id] = launch.start(ahead=True)
            except Exception:  # noqa: BLE001 - it is then started at its turn
                logger.exception("could not start the first kernel's child during the builds")

    def drop(self, failed: set[str]) -> None:
        """A child whose kernel failed to build is not needed."""
        if self.job is not None and self.job.id in failed and self.job.id in self.launches:
            self.launches.pop(self.job.id).close()


def evaluate_one(
    session: TaskSession, launch: Launch, job: KernelJob, settings: Settings, ahead: list | None = None
) -> Result:
    """One kernel's result; a failure of the harness itself is that kernel's harness_error, the rest go on."""
    try:
        return writable(evaluate_kernel(session, launch, settings, ahead))
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
    """Evaluate a manifest into out_dir; 0 when every kernel has a result file.

    With compile_only, build the CUDA candidates into the cache and stop: 0 when every build succeeded
    (a failed build still gets its result file), so a later batch on the same cache starts evaluating at once.
    """
    manifest = read_manifest(manifest_path)
    settings = manifest_settings(manifest, cache_dir)
    settings.timing_cpu = reserve_timing_cpu(settings.policy.device)  # before any thread or child starts
    settings.environment["timing_cpu"] = settings.timing_cpu
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out_dir / "environment.json", settings.environment)
    pending = [job for job in manifest.kernels if not (out_dir / f"{job.id}.json").exists()]
    logger.info("%d of %d kernel(s) to evaluate", len(pending), len(manifest.kernels))
    warm = warms_baselines(settings, builds_to_do(pending, settings))
    ahead = [path for path, _ in by_task(pending)] if warm and not compile_only else []
    ledger = KeptLedger.for_batch(settings)  # one share for every warm-up of the batch
    warmup = BaselineWarmup(ahead, settings, ledger=ledger)
    first = FirstChild([] if compile_only else pending, settings)
    try:
        with warmup:  # the GPU is idle while the candidates build
            first.start_if_built()
            jobs = workers or os.cpu_count() or 1
            failed = precompile(pending, settings, jobs, out_dir, on_built=first.start_if_built)
        if compile_only:
            logger.info("compile only: %d build(s) failed", len(failed))
            return 1 if failed else 0
        first.drop(failed)
        todo = [job for job in pending if job.id not in failed]
        for job, result in evaluate_jobs(todo, settings, warmup.kept, first.launches, ledger):
            write_json_atomic(out_dir / f"{job.id}.json", result.to_dict())
            logger.info("%s: %s", job.id, result.summary())
    finally:
        close_launches(first.launches)
        warmup.close_kept()
    missing = [job.id for job in manifest.kernels if not (out_dir / f"{job.id}.json").exists()]
    return 1 if missing else 0
