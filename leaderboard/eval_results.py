"""KernelBench's eval_results.json: a verified run written in its layout, and such a file read back as a
reported run's per-task results (validated strictly; the writer stores it whole or not at all).

The layout (KernelBench's scripts/eval_from_generations.py): an object keyed by problem id (a string),
each holding a list of samples `{"sample_id", "compiled", "correctness", "metadata", "runtime",
"runtime_stats"}`; older files hold one sample object instead of a list. `runtime` is -1.0 when not timed.
KernelBench keeps the reference's time apart (results/timing/<hardware>/<baseline>.json, keyed by level and
problem file name); its eval API also records `ref_runtime` on a result, which is read when present.
"""

import json
import math
from dataclasses import dataclass, field

NOT_TIMED = -1.0


class EvalResultsError(ValueError):
    """A file that is not a valid eval_results.json (or baseline timing file); the message says where."""


@dataclass(frozen=True)
class Sample:
    """One sample of one problem as the file gives it, with the speedup when both times are known."""

    problem_id: int
    sample_id: int
    compiled: bool
    correct: bool
    runtime: float | None
    ref_runtime: float | None
    metadata: dict = field(default_factory=dict)

    @property
    def speedup(self) -> float | None:
        if self.runtime and self.ref_runtime:
            return self.ref_runtime / self.runtime
        return None


def load_json(text: str, what: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise EvalResultsError(f"{what} is not JSON: {error}") from None


def positive_time(value, where: str) -> float | None:
    """A time in the file: a positive finite number, or None for KernelBench's -1.0 (not timed)."""
    if value is None or value == NOT_TIMED:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise EvalResultsError(f"{where}: a time must be a positive number or -1.0, not {value!r}")
    return float(value)


def parse_sample(problem_id: int, raw, where: str) -> Sample:
    if not isinstance(raw, dict):
        raise EvalResultsError(f"{where}: a sample must be an object")
    for key in ("sample_id", "compiled", "correctness"):
        if key not in raw:
            raise EvalResultsError(f"{where}: missing {key!r}")
    sample_id = raw["sample_id"]
    if isinstance(sample_id, bool) or not isinstance(sample_id, int) or sample_id < 0:
        raise EvalResultsError(f"{where}: sample_id must be a whole number ≥ 0")
    if not isinstance(raw["compiled"], bool) or not isinstance(raw["correctness"], bool):
        raise EvalResultsError(f"{where}: compiled and correctness must be true or false")
    if raw["correctness"] and not raw["compiled"]:
        raise EvalResultsError(f"{where}: correct but not compiled")
    metadata = raw.get("metadata", {})
    if not isinstance(metadata, dict):
        raise EvalResultsError(f"{where}: metadata must be an object")
    return Sample(
        problem_id=problem_id,
        sample_id=sample_id,
        compiled=raw["compiled"],
        correct=raw["correctness"],
        runtime=positive_time(raw.get("runtime"), f"{where} runtime"),
        ref_runtime=positive_time(raw.get("ref_runtime"), f"{where} ref_runtime"),
        metadata=metadata,
    )


def problem_key(key: str, task_count: int) -> int:
    if not isinstance(key, str) or not key.isdigit():
        raise EvalResultsError(f"problem id {key!r} is not a whole number")
    problem_id = int(key)
    if not 1 <= problem_id <= task_count:
        raise EvalResultsError(f"problem id {problem_id} is outside the level's 1–{task_count}")
    return problem_id


def parse_eval_results(text: str, task_count: int) -> list[Sample]:
    """Every sample of the file, in problem and sample order; EvalResultsError on anything malformed."""
    data = load_json(text, "the eval results file")
    if not isinstance(data, dict) or not data:
        raise EvalResultsError("the eval results file must be a non-empty object keyed by problem id")
    samples: list[Sample] = []
    for key, value in data.items():
        problem_id = problem_key(key, task_count)
        raw_samples = [value] if isinstance(value, dict) else value
        if not isinstance(raw_samples, list) or not raw_samples:
            raise EvalResultsError(f"problem {key}: expected a list of samples")
        seen = set()
        for index, raw in enumerate(raw_samples):
            sample = parse_sample(problem_id, raw, f"problem {key} sample #{index}")
            if sample.sample_id in seen:
                raise EvalResultsError(f"problem {key}: sample_id {sample.sample_id} appears twice")
            seen.add(sample.sample_id)
            samples.append(sample)
    return sorted(samples, key=lambda s: (s.problem_id, s.sample_id))


def parse_baseline_times(text: str, level: int) -> dict[int, float]:
    """Reference times by problem id from KernelBench's results/timing file: `level{N}` → problem file
    name (`{id}_{Name}.py`) → {"mean": …}."""
    data = load_json(text, "the baseline timing file")
    level_times = data.get(f"level{level}") if isinstance(data, dict) else None
    if not isinstance(level_times, dict):
        raise EvalResultsError(f"the baseline timing file has no 'level{level}' object")
    times = {}
    for name, stats in level_times.items():
        prefix = name.split("_", 1)[0]
        if not prefix.isdigit() or not isinstance(stats, dict):
            raise EvalResultsError(f"baseline timing {name!r}: expected '<id>_<name>.py' with its stats")
        time = positive_time(stats.get("mean"), f"baseline timing {name!r} mean")
        if time is not None:
            times[int(prefix)] = time
    return times


def with_reference_times(samples: list[Sample], times: dict[int, float]) -> list[Sample]:
    """The samples with the reference time of the timing file where the sample records none."""
    return [
        s
        if s.ref_runtime is not None or s.problem_id not in times
        else Sample(
            s.problem_id, s.sample_id, s.compiled, s.correct, s.runtime, times[s.problem_id], s.metadata
        )
        for s in samples
    ]


# --- Export: a verified run in KernelBench's layout ------------------------------------------------------


def mean_time(stats) -> float:
    """A harness timing record's mean (else median) in ms, or -1.0 when not timed."""
    if isinstance(stats, int | float) and not isinstance(stats, bool):
        return float(stats)
    if isinstance(stats, dict):
        for key in ("mean", "median"):
            value = stats.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
    return NOT_TIMED


def timing_stats(stats) -> dict:
    """The summary statistics of a timing record (the raw samples left out)."""
    if not isinstance(stats, dict):
        return {}
    return {key: value for key, value in stats.items() if isinstance(value, int | float | str)}


def export_sample(result, correct: bool, hardware: str) -> dict:
    """One TaskResult as a KernelBench sample; correctness is as this site ranks it (a hack is incorrect)."""
    return {
        "sample_id": result.kernel.sample,
        "compiled": result.compiled,
        "correctness": correct,
        "metadata": {
            "task": result.task.key,
            "hardware": hardware,
            "harness_version": result.run.harness_version,
            "leaderboard_run": result.run_id,
            "error_kind": result.error_kind,
            "flags": sorted({flag.get("code", "?") for flag in result.flags if isinstance(flag, dict)}),
            "speedup_eager": result.speedup_eager,
            "speedup_compile": result.speedup_compile,
        },
        "runtime": mean_time(result.runtime_ms),
        "runtime_stats": timing_stats(result.runtime_ms),
        "ref_runtime": mean_time(result.baseline_eager_ms),
        "ref_runtime_stats": timing_stats(result.baseline_eager_ms),
    }
