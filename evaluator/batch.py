"""A batch from a manifest: compile every candidate in parallel first, then evaluate them one by one."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.compile_cache import CompileCache
from evaluator.environment import collect, cuda_arch_list
from evaluator.evaluate import Failed, Settings, child_spec, evaluate_kernel, expect, new_child
from evaluator.policy import DEVICES, MODES, make_policy
from evaluator.reference import PreparedTask, TaskError, prepare_task
from evaluator.result import Result, writable, write_json_atomic
from evaluator.sandbox import default_limits, sandbox_report
from evaluator.sources import kernel_identity, sha256_text, task_identity

logger = logging.getLogger(__name__)

POLICY_KEYS = ("baselines", "tolerance", "trials", "warmup")
TIMEOUT_KEYS = ("compile_timeout", "run_timeout")
LIMIT_KEYS = ("memory_limit_mb", "max_tasks", "temp_dir_mb")
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


class ManifestError(ValueError):
    """The manifest is malformed: nothing is evaluated."""


@dataclass(frozen=True)
class KernelJob:
    id: str
    task_path: Path
    kernel_path: Path

    @property
    def source(self) -> str:
        return self.kernel_path.read_text(encoding="utf-8", errors="replace")


@dataclass(frozen=True)
class Manifest:
    device: str
    mode: str
    kernels: tuple[KernelJob, ...]
    options: dict[str, Any]


def read_manifest(path: Path) -> Manifest:
    """Parse and validate a manifest; every problem is reported before anything runs."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ManifestError(f"cannot read the manifest {path}: {error}") from error
    if not isinstance(data, dict):
        raise ManifestError("the manifest must be a JSON object")
    device, mode = data.get("device"), data.get("mode", "hardened")
    if device not in DEVICES:
        raise ManifestError(f"device must be one of {DEVICES}, not {device!r}")
    if mode not in MODES:
        raise ManifestError(f"mode must be one of {MODES}, not {mode!r}")
    entries = data.get("kernels")
    if not isinstance(entries, list) or not entries:
        raise ManifestError("kernels must be a non-empty list")
    kernels, seen = [], set()
    for number, entry in enumerate(entries):
        kernels.append(_kernel_job(entry, number, seen, path.parent))
    options = {key: data[key] for key in POLICY_KEYS + TIMEOUT_KEYS + LIMIT_KEYS if key in data}
    return Manifest(device, mode, tuple(kernels), options)


def _kernel_job(entry: Any, number: int, seen: set[str], base: Path) -> KernelJob:
    if not isinstance(entry, dict):
        raise ManifestError(f"kernels[{number}] must be an object")
    kernel_id = entry.get("id")
    if not isinstance(kernel_id, str) or not SAFE_ID.match(kernel_id):
        raise ManifestError(
            f"kernels[{number}].id must be a safe file name ([A-Za-z0-9._-]), not {kernel_id!r}"
        )
    if kernel_id in seen:
        raise ManifestError(f"kernels[{number}].id {kernel_id!r} is repeated")
    seen.add(kernel_id)
    paths = []
    for key in ("task_path", "kernel_path"):
        value = entry.get(key)
        if not isinstance(value, str):
            raise ManifestError(f"kernels[{number}].{key} must be a path")
        resolved = (base / value) if not os.path.isabs(value) else Path(value)
        if not resolved.is_file():
            raise ManifestError(f"kernels[{number}].{key}: no such file {resolved}")
        paths.append(resolved)
    return KernelJob(kernel_id, paths[0], paths[1])


def default_cache_dir() -> Path:
    root = os.environ.get("EVALUATOR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "kb-evaluator"
    )
    return Path(root)


def needs_build(job: KernelJob, settings: Settings) -> bool:
    """Only CUDA sources are built ahead; Triton compiles at first launch, PyTorch needs nothing."""
    return (
        settings.policy.device == "cuda" and kernel_identity(job.kernel_path, job.source)["backend"] == "cuda"
    )


def compile_one(job: KernelJob, settings: Settings) -> Result | None:
    """Build one candidate in its own sandbox; a result only when the build fails, None when it is built."""
    try:
        return build_candidate(job, settings)
    except Exception:  # noqa: BLE001 - our own failure: that kernel gets a harness_error, the rest go on
        logger.exception("harness error while building %s", job.kernel_path)
        return harness_failure(job, settings, traceback.format_exc()[-6000:])


def build_candidate(job: KernelJob, settings: Settings) -> Result | None:
    source = job.source
    sha = sha256_text(source)
    if settings.cache.is_built(sha):
        return None
    started = time.monotonic()
    result = Result(
        mode=settings.policy.mode,
        device=settings.policy.device,
        task=task_identity(job.task_path, job.task_path.read_text(encoding="utf-8")),
        kernel=kernel_identity(job.kernel_path, source),
        speedup_statistic=settings.policy.speedup_statistic,
        environment=settings.environment,
    )
    spec = child_spec(job.task_path, 0, job.kernel_path, settings, "compile")
    with new_child(spec, settings, settings.limits(), sha) as child:
        spec["workdir"] = str(child.scratch)
        spec["task_path"] = child.add_file(job.task_path, "task.py")
        spec["kernel_path"] = child.add_file(job.kernel_path, "kernel.py")
        try:
            child.start()
            expect(child, result, "ready", settings.compile_timeout, "startup")
            expect(child, result, "compiled", settings.compile_timeout, "import and compile")
        except Failed:
            result.log = child.log()
            result.durations_s["compile"] = result.durations_s["total"] = time.monotonic() - started
            return result
        child.wait_exit(timeout=60)
        try:
            child.save_extensions()
        except OSError as error:
            result.log = child.log()
            result.durations_s["compile"] = result.durations_s["total"] = time.monotonic() - started
            return result.fail("resource_limit", f"the build output cannot be kept: {error}")
    settings.cache.mark_built(sha)
    return None


def precompile(jobs: list[KernelJob], settings: Settings, workers: int, out_dir: Path) -> set[str]:
    """Build all CUDA candidates in parallel, each source once; write failures at once; return failed ids.

    Kernels with the same source (a bundle's samples often repeat one) share one build: two builds of one
    source at a time would write the same cache folder. A failed build is the result of each of them.
    """
    by_source: dict[str, list[KernelJob]] = {}
    for job in jobs:
        if needs_build(job, settings):
            by_source.setdefault(sha256_text(job.source), []).append(job)
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


def prepared(cache: dict[Path, PreparedTask | TaskError], path: Path, settings: Settings):
    key = path.resolve()
    if key not in cache:
        try:
            cache[key] = prepare_task(path, settings.policy)
        except TaskError as error:
            cache[key] = error
        except Exception as error:  # noqa: BLE001 - e.g. out of memory while computing the reference
            logger.exception("cannot prepare the task %s", path)
            cache[key] = TaskError(f"the reference could not be computed for {path}: {error!r}")
    return cache[key]


def harness_failure(job: KernelJob, settings: Settings, message: str) -> Result:
    result = Result(
        mode=settings.policy.mode,
        device=settings.policy.device,
        task=task_identity(job.task_path, job.task_path.read_text(encoding="utf-8")),
        kernel=kernel_identity(job.kernel_path, job.source),
        speedup_statistic=settings.policy.speedup_statistic,
        environment=settings.environment,
    )
    return result.fail("harness_error", message)


def evaluate_job(job: KernelJob, tasks: dict[Path, PreparedTask | TaskError], settings: Settings) -> Result:
    """One kernel's result; a failure of the harness itself is that kernel's harness_error, the rest go on."""
    try:
        task = prepared(tasks, job.task_path, settings)
        if isinstance(task, TaskError):
            return harness_failure(job, settings, str(task))
        return evaluate_kernel(task, job.kernel_path, settings)
    except Exception:  # noqa: BLE001 - our own failure: that kernel gets a harness_error
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
    try:
        policy = make_policy(manifest.mode, manifest.device, **policy_options(manifest.options))
        timeouts = {key: float(manifest.options[key]) for key in TIMEOUT_KEYS if key in manifest.options}
        limits = {key: int(manifest.options[key]) for key in LIMIT_KEYS if key in manifest.options}
    except (TypeError, ValueError) as error:
        raise ManifestError(f"bad manifest option: {error}") from error
    out_dir.mkdir(parents=True, exist_ok=True)
    python = os.environ.get("EVALUATOR_CHILD_PYTHON") or sys.executable
    limits_used = default_limits(manifest.device, **limits)
    environment = collect(manifest.device, sandbox_report(limits_used, python))
    write_json_atomic(out_dir / "environment.json", environment)
    settings = Settings(
        policy=policy,
        cache=CompileCache(cache_dir or default_cache_dir()),
        arch_list=cuda_arch_list() if manifest.device == "cuda" else None,
        environment=environment,
        python=python,
        **timeouts,
        **limits,
    )
    pending = [job for job in manifest.kernels if not (out_dir / f"{job.id}.json").exists()]
    logger.info("%d of %d kernel(s) to evaluate", len(pending), len(manifest.kernels))
    failed = precompile(pending, settings, workers or os.cpu_count() or 1, out_dir)
    if compile_only:
        logger.info("compile only: %d build(s) failed", len(failed))
        return 1 if failed else 0
    tasks: dict[Path, PreparedTask | TaskError] = {}
    for job in pending:
        if job.id in failed:
            continue
        result = writable(evaluate_job(job, tasks, settings))
        write_json_atomic(out_dir / f"{job.id}.json", result.to_dict())
        logger.info("%s: %s", job.id, result.summary())
    missing = [job.id for job in manifest.kernels if not (out_dir / f"{job.id}.json").exists()]
    return 1 if missing else 0


def policy_options(options: dict[str, Any]) -> dict[str, Any]:
    values = {key: options[key] for key in POLICY_KEYS if key in options}
    if "baselines" in values:
        values["baselines"] = tuple(values["baselines"])
    return values
