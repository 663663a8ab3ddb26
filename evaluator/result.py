"""The typed result of one kernel evaluation (schema 1) and its JSON form, both ways (to_dict, from_dict)."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator import HARNESS_VERSION, RESULT_SCHEMA

# Error kinds that are the kernel's fault; HARNESS_ERROR is ours (retried, never charged).
KERNEL_ERROR_KINDS = (
    "compile_error",
    "missing_model_new",
    "init_error",
    "runtime_error",
    "wrong_shape",
    "wrong_dtype",
    "wrong_device",
    "not_a_tensor",
    "aliases_input",
    "mutated_input",
    "nan_inf",
    "wrong_values",
    "timeout",
    "crash",
    "needs_gpu",
    "sandbox_violation",
    "resource_limit",
)
HARNESS_ERROR = "harness_error"
ERROR_KINDS = (*KERNEL_ERROR_KINDS, HARNESS_ERROR)
SEVERITIES = ("info", "suspect", "hack")
LOG_LIMIT = 20_000


@dataclass
class ErrorInfo:
    """Why a kernel is not compiled or not correct."""

    kind: str
    message: str

    def __post_init__(self):
        if self.kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {self.kind!r}")


@dataclass
class Flag:
    """An annotation on a verdict; 'hack' and 'suspect' are never silent, 'info' is a track marker."""

    code: str
    severity: str
    detail: str

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown flag severity {self.severity!r}")


@dataclass
class Trial:
    """One correctness trial: inputs drawn with a seed from a distribution, run in an order."""

    seed: int
    distribution: str
    order: str
    passed: bool
    max_abs_error: float | None = None
    max_rel_error: float | None = None


@dataclass
class Correctness:
    atol: float
    rtol: float
    trials: list[Trial] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "atol": self.atol,
            "rtol": self.rtol,
            "passed": sum(trial.passed for trial in self.trials),
            "total": len(self.trials),
            "trials": [dataclasses.asdict(trial) for trial in self.trials],
            "skipped": list(self.skipped),
        }


@dataclass
class TimingInfo:
    method: str
    trials: int
    warmup: int
    l2_flush: bool
    note: str = ""
    host_check: dict[str, float] | None = None  # the harness's own clock against the sandbox's claims
    round_calls: int | None = None  # hardened timing: the most calls per side before the sides alternate
    round_sizes: list[int] | None = None  # hardened timing: each round's calls per side, in order
    cpu: int | None = None  # the core both sides' calls ran on (evaluator.trusted.cores); None: anywhere
    # Per side ("candidate", "reference"): its turns and loops on the harness's clock, its calls' claimed
    # time, and each phase its process reported (reported_*: a record of where time goes, judged on nothing)
    rounds_ms: dict[str, dict[str, float]] | None = None


@dataclass
class Result:
    """Everything the harness says about one kernel on one task."""

    mode: str
    device: str
    task: dict[str, Any]
    kernel: dict[str, Any]
    compiled: bool = False
    correct: bool = False
    error: ErrorInfo | None = None
    correctness: Correctness | None = None
    runtime_ms: dict[str, Any] | None = None
    baseline_ms: dict[str, dict[str, Any] | None] = field(
        default_factory=lambda: {"eager": None, "compile": None}
    )
    speedup: dict[str, float | None] = field(default_factory=lambda: {"eager": None, "compile": None})
    speedup_statistic: str = "median"
    timing: TimingInfo | None = None
    flags: list[Flag] = field(default_factory=list)
    degenerate: bool = False
    canaries: list[dict[str, Any]] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    durations_s: dict[str, float] = field(
        default_factory=lambda: {"compile": 0.0, "correctness": 0.0, "timing": 0.0, "total": 0.0}
    )
    resources: dict[str, Any] = field(default_factory=dict)  # problem sizes and each process's peak memory
    limits: dict[str, float] = field(default_factory=dict)  # the time limits this kernel ran under (s)
    log: str = ""

    def fail(self, kind: str, message: str) -> Result:
        """Record the first failure; later ones do not overwrite it."""
        if self.error is None:
            self.error = ErrorInfo(kind, message)
        self.correct = False
        return self

    def add_flag(self, code: str, severity: str, detail: str) -> None:
        if not any(flag.code == code for flag in self.flags):
            self.flags.append(Flag(code, severity, detail))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": RESULT_SCHEMA,
            "harness_version": HARNESS_VERSION,
            "mode": self.mode,
            "device": self.device,
            "task": self.task,
            "kernel": self.kernel,
            "compiled": self.compiled,
            "correct": self.correct,
            "error": dataclasses.asdict(self.error) if self.error else None,
            "correctness": self.correctness.to_dict() if self.correctness else None,
            "runtime_ms": self.runtime_ms,
            "baseline_ms": self.baseline_ms,
            "speedup": self.speedup,
            "speedup_statistic": self.speedup_statistic,
            "timing": dataclasses.asdict(self.timing) if self.timing else None,
            "flags": [dataclasses.asdict(flag) for flag in self.flags],
            "degenerate": self.degenerate,
            "canaries": self.canaries,
            "environment": self.environment,
            "durations_s": {key: round(value, 4) for key, value in self.durations_s.items()},
            "resources": self.resources,
            "limits": {key: round(value, 3) for key, value in self.limits.items()},
            "log": truncate_log(self.log),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """A result read back from its JSON (raises ValueError for another schema or a malformed one)."""
        if not isinstance(data, dict) or data.get("schema") != RESULT_SCHEMA:
            raise ValueError(f"not a result of schema {RESULT_SCHEMA}")
        try:
            error = ErrorInfo(**data["error"]) if data.get("error") else None
            correctness = correctness_from(data.get("correctness"))
            timing = TimingInfo(**data["timing"]) if data.get("timing") else None
            flags = [Flag(**flag) for flag in data.get("flags", [])]
            return cls(
                mode=data["mode"],
                device=data["device"],
                task=dict(data["task"]),
                kernel=dict(data["kernel"]),
                compiled=bool(data["compiled"]),
                correct=bool(data["correct"]),
                error=error,
                correctness=correctness,
                runtime_ms=data.get("runtime_ms"),
                baseline_ms=dict(data.get("baseline_ms") or {"eager": None, "compile": None}),
                speedup=dict(data.get("speedup") or {"eager": None, "compile": None}),
                speedup_statistic=data.get("speedup_statistic", "median"),
                timing=timing,
                flags=flags,
                degenerate=bool(data.get("degenerate")),
                canaries=list(data.get("canaries") or []),
                environment=dict(data.get("environment") or {}),
                durations_s=dict(data.get("durations_s") or {}),
                resources=dict(data.get("resources") or {}),
                limits=dict(data.get("limits") or {}),
                log=str(data.get("log", "")),
            )
        except (KeyError, TypeError) as error:
            raise ValueError(f"malformed result: {error!r}") from error

    def as_harness_error(self, message: str) -> Result:
        """The same kernel and task with a harness_error instead of a verdict (this one cannot be written)."""
        fallback = Result(
            mode=self.mode,
            device=self.device,
            task=self.task,
            kernel=self.kernel,
            speedup_statistic=self.speedup_statistic,
            environment=self.environment,
            log=self.log,
        )
        return fallback.fail(HARNESS_ERROR, message)

    def summary(self) -> str:
        """The one-line summary the CLI prints."""
        verdict = "correct" if self.correct else (self.error.kind if self.error else "incorrect")
        parts = [f"{self.task.get('name', '?')}", verdict]
        for baseline in ("eager", "compile"):
            if self.speedup.get(baseline) is not None:
                parts.append(f"{baseline} {self.speedup[baseline]:.3g}x")
        worst = [flag.code for flag in self.flags if flag.severity != "info"]
        if worst:
            parts.append("flags: " + ",".join(worst))
        if self.degenerate:
            parts.append("degenerate task")
        return " | ".join(parts)


def correctness_from(data: dict[str, Any] | None) -> Correctness | None:
    if not data:
        return None
    trials = [Trial(**trial) for trial in data.get("trials", [])]
    return Correctness(data["atol"], data["rtol"], trials, list(data.get("skipped", [])))


def writable(result: Result) -> Result:
    """The result if its JSON is valid (no NaN or infinity anywhere), else that kernel's harness_error."""
    try:
        json.dumps(result.to_dict(), allow_nan=False)
    except (TypeError, ValueError) as error:
        return result.as_harness_error(f"the result cannot be written as JSON: {error}")
    return result


def truncate_log(text: str, limit: int = LOG_LIMIT) -> str:
    """Keep the head and the tail of a long log."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… [{len(text) - limit} characters cut] …\n{text[-half:]}"


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Write JSON to a temp file in the same folder, then rename it over path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(payload, stream, indent=1, allow_nan=False)
            stream.write("\n")
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
