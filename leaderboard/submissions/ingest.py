"""Harness result files (schema 1) into TaskResult rows: read, check, store once per run and kernel."""

import json
import math
from pathlib import Path

from leaderboard.models import TaskResult

SCHEMA = 1
HARNESS_ERROR = "harness_error"


class BadResult(Exception):
    """A result file that is not a schema-1 harness result: an infrastructure failure, not the kernel's."""


def read_result(path: Path) -> dict:
    """Parse one result file and check the fields ingestion relies on."""
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise BadResult(f"{path.name}: unreadable result ({error})") from error
    if not isinstance(result, dict) or result.get("schema") != SCHEMA:
        raise BadResult(f"{path.name}: not a schema-{SCHEMA} result")
    missing = [key for key in ("harness_version", "compiled", "correct") if key not in result]
    if missing:
        raise BadResult(f"{path.name}: missing {', '.join(missing)}")
    return result


def error_of(result: dict) -> dict:
    error = result.get("error")
    return error if isinstance(error, dict) else {}


def is_harness_error(result: dict) -> bool:
    """The harness's own failure on this kernel: retried, never the kernel's verdict."""
    return error_of(result).get("kind") == HARNESS_ERROR


def finite_positive(value) -> float | None:
    """A speedup as stored: a finite positive float, otherwise None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) and value > 0 else None


def finite_json(value):
    """A JSON value with NaN and infinities replaced by None (PostgreSQL's jsonb refuses them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [finite_json(item) for item in value]
    return value


def result_fields(result: dict) -> dict:
    """TaskResult columns from a harness result."""
    result = finite_json(result)
    error = error_of(result)
    speedup = result.get("speedup") or {}
    baselines = result.get("baseline_ms") or {}
    correct = bool(result.get("correct"))
    return {
        "compiled": bool(result.get("compiled")),
        "correct": correct,
        "error_kind": str(error.get("kind") or "")[:40],
        "error_message": str(error.get("message") or ""),
        "runtime_ms": result.get("runtime_ms"),
        "baseline_eager_ms": baselines.get("eager"),
        "baseline_compile_ms": baselines.get("compile"),
        "speedup_eager": finite_positive(speedup.get("eager")) if correct else None,
        "speedup_compile": finite_positive(speedup.get("compile")) if correct else None,
        "flags": [flag for flag in result.get("flags") or [] if isinstance(flag, dict)],
        "degenerate": bool(result.get("degenerate")),
        "log": str(result.get("log") or ""),
        "raw": {key: value for key, value in result.items() if key != "log"},
    }


def store_result(run, kernel, result: dict) -> TaskResult:
    """Store a kernel's verdict in a run; a second call for the same kernel changes nothing."""
    stored, _ = TaskResult.objects.get_or_create(
        run=run, kernel=kernel, defaults={"task_id": kernel.task_id, **result_fields(result)}
    )
    return stored
