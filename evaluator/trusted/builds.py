"""The compile stage: every CUDA candidate of a batch built in parallel sandboxed children, beside evaluation.

Each build runs in a child of role 'build' (it imports the candidate, so `load_inline` compiles, and stops),
with TORCH_EXTENSIONS_DIR in the compile cache folder of its source's hash; with a new root the child builds
into a copy the harness then saves. A failed build is the result of every kernel with that source.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor

from evaluator.manifest import KernelJob
from evaluator.result import Result, write_json_atomic
from evaluator.sources import kernel_identity, sha256_text, task_identity
from evaluator.trusted.conversation import Conversation, Stop
from evaluator.trusted.settings import STARTUP_TIMEOUT, Settings, candidate_child

logger = logging.getLogger(__name__)


def needs_build(job: KernelJob, settings: Settings) -> bool:
    """Only CUDA sources are built ahead; Triton compiles at first launch, PyTorch needs nothing."""
    return (
        settings.policy.device == "cuda" and kernel_identity(job.kernel_path, job.source)["backend"] == "cuda"
    )


def job_result(job: KernelJob, settings: Settings) -> Result:
    """An empty result for one kernel of the manifest."""
    return Result(
        mode=settings.policy.mode,
        device=settings.policy.device,
        task=task_identity(job.task_path, job.task_path.read_text(encoding="utf-8")),
        kernel=kernel_identity(job.kernel_path, job.source),
        speedup_statistic=settings.policy.speedup_statistic,
        environment=settings.environment,
    )


def harness_failure(job: KernelJob, settings: Settings, message: str) -> Result:
    return job_result(job, settings).fail("harness_error", message)


def compile_one(job: KernelJob, settings: Settings) -> Result | None:
    """Build one candidate in its own sandbox; a result only when the build fails, None when it is built."""
    try:
        return build_candidate(job, settings)
    except Exception:  # noqa: BLE001 - our own failure: that kernel gets a harness_error, the rest go on
        logger.exception("harness error while building %s", job.kernel_path)
        return harness_failure(job, settings, traceback.format_exc()[-6000:])


def build_candidate(job: KernelJob, settings: Settings) -> Result | None:
    sha = sha256_text(job.source)
    if settings.cache.is_built(sha):
        return None
    started = time.monotonic()
    child = candidate_child(settings, "build", sha)
    child.label = job.kernel_path.name
    with child:
        child.spec["task_path"] = child.add_file(job.task_path, "task.py")
        child.spec["kernel_path"] = child.add_file(job.kernel_path, "kernel.py")
        talk = Conversation(child, "kernel")
        try:
            child.start()
            talk.expect("ready", STARTUP_TIMEOUT, "startup")
            talk.request({"cmd": "import"}, "imported", settings.compile_timeout, "import and compile")
            child.send({"cmd": "stop"})
            child.wait_exit(timeout=60)
            child.save_shares()
        except Stop as stop:
            return failed_build(job, settings, child.log(), started, stop.kind, stop.message)
        except OSError as error:
            return failed_build(
                job,
                settings,
                child.log(),
                started,
                "resource_limit",
                f"the build output cannot be kept: {error}",
            )
    settings.cache.mark_built(sha)
    return None


def failed_build(
    job: KernelJob, settings: Settings, log: str, started: float, kind: str, message: str
) -> Result:
    result = job_result(job, settings).fail(kind, message)
    result.log = log
    result.durations_s["compile"] = result.durations_s["total"] = time.monotonic() - started
    return result


class Builds:
    """The compile stage running beside evaluation: each CUDA source built once, in background threads.

    Builds are queued in the order given (the order kernels are evaluated in), so the first kernels' builds
    finish first and evaluation starts while the rest still compile; the build children run at a lower CPU
    priority (settings.build_nice) than the timing. Kernels with the same source (a bundle's samples often
    repeat one) share one build: two builds of one source at a time would write the same cache folder. A
    failed build is written as the result of every kernel with that source the moment it is known.
    """

    def __init__(self, jobs: list[KernelJob], settings: Settings, workers: int, out_dir):
        self.settings, self.out_dir = settings, out_dir
        self.groups: dict[str, list[KernelJob]] = {}
        for job in jobs:
            if needs_build(job, settings):
                self.groups.setdefault(sha256_text(job.source), []).append(job)
        self.source_of = {job.id: sha for sha, group in self.groups.items() for job in group}
        self.futures: dict[str, Future] = {}
        self.pool = None
        if self.groups:
            logger.info("compiling %d candidate source(s) on %d worker(s)", len(self.groups), workers)
            self.pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="build")
            for sha, group in self.groups.items():
                self.futures[sha] = self.pool.submit(self.build, group)

    def build(self, group: list[KernelJob]) -> bool:
        """Build one source (in a pool thread); write the failure of each of its kernels; True when built."""
        result = compile_one(group[0], self.settings)
        for job in group if result is not None else ():
            write_json_atomic(self.out_dir / f"{job.id}.json", for_job(result, job).to_dict())
        return result is None

    def future(self, job: KernelJob) -> Future | None:
        """The job's build, or None when it has nothing to build."""
        return self.futures.get(self.source_of.get(job.id, ""))

    def pending(self, job: KernelJob) -> bool:
        """Its build is still running or queued."""
        future = self.future(job)
        return future is not None and not future.done()

    def ready(self, job: KernelJob) -> bool:
        """Wait for the job's build (if it has one); False when the build failed (its result is written)."""
        future = self.future(job)
        return future is None or future.result()

    def failed(self) -> set[str]:
        """Wait for every build; the ids of the kernels whose build failed."""
        failed = [group for sha, group in self.groups.items() if not self.futures[sha].result()]
        return {job.id for group in failed for job in group}

    def close(self) -> None:
        """Drop the builds not started yet; wait for the running ones."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


def for_job(result: Result, job: KernelJob) -> Result:
    """A build's result as the result of one kernel with that source (its own task and path)."""
    return dataclasses.replace(
        result,
        task=task_identity(job.task_path, job.task_path.read_text(encoding="utf-8")),
        kernel=kernel_identity(job.kernel_path, job.source),
    )
