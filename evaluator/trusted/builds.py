"""The compile stage: every CUDA candidate of a batch built ahead, in parallel sandboxed children.

Each build runs in a child of role 'build' (it imports the candidate, so `load_inline` compiles, and stops),
with TORCH_EXTENSIONS_DIR in the compile cache folder of its source's hash; with a new root the child builds
into a copy the harness then saves. A failed build is the result of every kernel with that source.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

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


def jobs_by_source(jobs: list[KernelJob], settings: Settings) -> dict[str, list[KernelJob]]:
    """The jobs that need a build, grouped by the sha256 of their source (one build each)."""
    groups: dict[str, list[KernelJob]] = {}
    for job in jobs:
        if needs_build(job, settings):
            groups.setdefault(sha256_text(job.source), []).append(job)
    return groups


def build_done(job: KernelJob, settings: Settings) -> bool:
    """Whether this kernel can start its child now: nothing to build, or its source is in the cache."""
    return not needs_build(job, settings) or settings.cache.is_built(sha256_text(job.source))


def builds_to_do(jobs: list[KernelJob], settings: Settings) -> int:
    """How many distinct CUDA sources of these jobs are not in the compile cache yet."""
    return sum(not settings.cache.is_built(sha) for sha in jobs_by_source(jobs, settings))


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


def precompile(
    jobs: list[KernelJob],
    settings: Settings,
    workers: int,
    out_dir,
    on_built: Callable[[list[KernelJob]], None] | None = None,
) -> set[str]:
    """Build all CUDA candidates in parallel, each source once; write failures at once; return failed ids.

    Kernels with the same source (a bundle's samples often repeat one) share one build: two builds of one
    source at a time would write the same cache folder. A failed build is the result of each of them.
    on_built gets the kernels of each source built, in the calling thread, in the order of the jobs.
    """
    by_source = jobs_by_source(jobs, settings)
    failed: set[str] = set()
    if not by_source:
        return failed
    logger.info("compiling %d candidate source(s) on %d worker(s)", len(by_source), workers)
    leaders = [group[0] for group in by_source.values()]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for group, result in zip(
            by_source.values(), pool.map(lambda job: compile_one(job, settings), leaders), strict=True
        ):
            if result is None:
                if on_built is not None:
                    on_built(group)
                continue
            for job in group:
                write_json_atomic(out_dir / f"{job.id}.json", for_job(result, job).to_dict())
                failed.add(job.id)
    return failed


def for_job(result: Result, job: KernelJob) -> Result:
    """A build's result as the result of one kernel with that source (its own task and path)."""
    return dataclasses.replace(
        result,
        task=task_identity(job.task_path, job.task_path.read_text(encoding="utf-8")),
        kernel=kernel_identity(job.kernel_path, job.source),
    )
