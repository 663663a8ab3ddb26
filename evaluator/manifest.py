"""The batch contract, both sides: the manifest (read and written here) and the command that runs it.

A manifest is a JSON object: device, mode, kernels (each an id, a task path and a kernel path, relative to
the manifest's folder or absolute) and options (policy: baselines, tolerance, trials, warmup,
timing_budget_ms; timeouts: compile_timeout, run_timeout; limits: memory_limit_mb, max_tasks, temp_dir_mb,
slot_mb). Callers write it with `write_manifest` and run it with `batch_command`; `python -m evaluator batch`
reads it with `read_manifest`, which reports every problem before anything runs.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.policy import DEVICES, MODES

POLICY_KEYS = ("baselines", "tolerance", "trials", "warmup", "timing_budget_ms", "round_calls")
TIMEOUT_KEYS = ("compile_timeout", "run_timeout")
LIMIT_KEYS = ("memory_limit_mb", "max_tasks", "temp_dir_mb", "slot_mb")
OPTION_KEYS = POLICY_KEYS + TIMEOUT_KEYS + LIMIT_KEYS
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


def write_manifest(
    path: Path, device: str, mode: str, kernels: list[dict[str, str]] | list[KernelJob], **options: Any
) -> Path:
    """Write a manifest (kernels as KernelJobs or {id, task_path, kernel_path}); unknown options refused."""
    unknown = set(options) - set(OPTION_KEYS)
    if unknown:
        raise ManifestError(f"unknown manifest options {sorted(unknown)}")
    entries = [
        {"id": job.id, "task_path": str(job.task_path), "kernel_path": str(job.kernel_path)}
        if isinstance(job, KernelJob)
        else dict(job)
        for job in kernels
    ]
    document = {"device": device, "mode": mode, "kernels": entries}
    document.update({key: value for key, value in options.items() if value is not None})
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return path


def batch_command(
    manifest: Path, out_dir: Path, *, jobs: int | None = None, cache_dir: Path | None = None,
    compile_only: bool = False, python: str = sys.executable,
) -> list[str]:  # fmt: skip
    """The command line that evaluates a manifest into out_dir."""
    command = [python, "-m", "evaluator", "batch", "--manifest", str(manifest), "--out", str(out_dir)]
    if jobs:
        command += ["--jobs", str(jobs)]
    if cache_dir:
        command += ["--cache-dir", str(cache_dir)]
    if compile_only:
        command.append("--compile-only")
    return command


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
        kernels.append(kernel_job(entry, number, seen, path.parent))
    options = {key: data[key] for key in OPTION_KEYS if key in data}
    return Manifest(device, mode, tuple(kernels), options)


def kernel_job(entry: Any, number: int, seen: set[str], base: Path) -> KernelJob:
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
