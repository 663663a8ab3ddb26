"""Evaluate one kernel against one prepared task: drive the sandboxed child stage by stage, judge here."""

from __future__ import annotations

import dataclasses
import logging
import math
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from evaluator import fingerprint, flags
from evaluator.canaries import passes_kernelbench
from evaluator.compile_cache import CompileCache
from evaluator.correctness import compare_all, load_outputs
from evaluator.policy import MIN_SAMPLE_MS, Policy
from evaluator.reference import PreparedTask
from evaluator.result import Correctness, Result, TimingInfo
from evaluator.sandbox import ChildGone, ChildProcess, Deadline, Limits, default_limits
from evaluator.sources import kernel_identity
from evaluator.stats import speedup, summarize

logger = logging.getLogger(__name__)

STARTUP_TIMEOUT = 180.0
OUTPUT_FILES = {"correctness": "correctness.pt", "post_timing": "post_timing.pt"}
CPU_TIMING_NOTE = "CPU timing, not a GPU verification"
NEAR_CANARY = 0.5  # an output this much nearer a passing null canary than the reference is that canary


@dataclass
class Settings:
    """How long each stage may take, where builds are cached, and which interpreter runs children."""

    policy: Policy
    compile_timeout: float = 900.0
    run_timeout: float = 600.0
    cache: CompileCache | None = None
    python: str = sys.executable
    arch_list: str | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    memory_limit_mb: int | None = None
    max_tasks: int | None = None
    temp_dir_mb: int | None = None

    def limits(self, output_bytes: int = 0, input_bytes: int = 0) -> Limits:
        """The child's limits for a task of this size, with the manifest's overrides."""
        overrides = {
            "memory_limit_mb": self.memory_limit_mb,
            "max_tasks": self.max_tasks,
            "temp_dir_mb": self.temp_dir_mb,
        }
        return default_limits(self.policy.device, output_bytes, input_bytes, **overrides)

    def extensions(self, kernel_sha: str) -> Path | None:
        """The compile-cache folder of a kernel source (its built extension, if any)."""
        return self.cache.prepare(kernel_sha) if self.cache is not None else None


class Failed(Exception):
    """The evaluation ended early; the result already says why."""


def child_environment(settings: Settings) -> dict[str, str]:
    """Variables the child needs: one GPU arch, Triton's interpreter (the extension folder: ChildProcess)."""
    extra = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1"}
    if settings.policy.device == "cpu":
        extra["TRITON_INTERPRET"] = "1"
        extra["CUDA_VISIBLE_DEVICES"] = ""
    elif settings.arch_list:
        extra["TORCH_CUDA_ARCH_LIST"] = settings.arch_list
    return extra


def new_child(spec: dict, settings: Settings, limits: Limits, kernel_sha: str) -> ChildProcess:
    """A sandboxed child for one kernel: its limits, its variables and its compile-cache folder."""
    extensions = settings.extensions(kernel_sha)
    return ChildProcess(spec, limits, child_environment(settings), settings.python, extensions=extensions)


def child_spec(task_path: Path, output_bytes: int, kernel_path: Path, settings: Settings, stage: str) -> dict:
    """The child's instructions (paths, mode, checks, timing plan); never an expected output."""
    policy = settings.policy
    return {
        "stage": stage,
        "mode": policy.mode,
        "device": policy.device,
        "task_path": str(task_path.resolve()),
        "kernel_path": str(kernel_path.resolve()),
        "inputs_path": "",
        "poison": policy.poison_memory,
        "check_inputs": policy.check_inputs,
        "output_bytes": output_bytes,
        "baselines": list(policy.baselines),
        "timing": dataclasses.asdict(policy.timing),
    }


def new_result(task: PreparedTask, kernel_path: Path, source: str, settings: Settings) -> Result:
    policy = settings.policy
    result = Result(
        mode=policy.mode,
        device=policy.device,
        task=task.identity,
        kernel=kernel_identity(kernel_path, source),
        speedup_statistic=policy.speedup_statistic,
        environment=settings.environment,
        degenerate=task.degenerate,
        canaries=task.canaries,
    )
    result.correctness = Correctness(policy.tolerance, policy.tolerance, skipped=list(task.skipped))
    if task.degenerate:
        passed = ", ".join(canary["name"] for canary in task.canaries if canary["passed"])
        result.add_flag(
            "degenerate_task", "info", f"null canaries pass this task under KernelBench rules: {passed}"
        )
    flags.apply_static_flags(result, source)
    return result


def evaluate_kernel(task: PreparedTask, kernel_path: Path, settings: Settings) -> Result:
    """The whole verdict for one kernel. Never raises for the kernel's faults; they end up in the result."""
    started = time.monotonic()
    source = kernel_path.read_text(encoding="utf-8", errors="replace")
    result = new_result(task, kernel_path, source, settings)
    if result.kernel["backend"] == "cuda" and settings.policy.device == "cpu":
        result.fail("needs_gpu", "a CUDA (load_inline) kernel needs a CUDA GPU; this run is on the CPU")
        return finish(result, started)
    limits = settings.limits(task.output_bytes, task.payload_bytes)
    spec = child_spec(task.path, task.output_bytes, kernel_path, settings, "evaluate")
    with new_child(spec, settings, limits, result.kernel["sha256"]) as child:
        spec["workdir"] = str(child.scratch)
        spec["inputs_path"] = child.add_payload(task.write_payload)
        spec["task_path"] = child.add_file(task.path, "task.py")
        spec["kernel_path"] = child.add_file(kernel_path, "kernel.py")
        try:
            drive(child, task, result, settings)
        except Failed:
            pass
        except Exception:  # noqa: BLE001 - our own failure: recorded as such, the batch goes on
            logger.exception("harness error while evaluating %s", kernel_path)
            result.fail("harness_error", traceback.format_exc()[-6000:])
        finally:
            child.kill()
            result.log = child.log()
    return finish(result, started)


def finish(result: Result, started: float) -> Result:
    result.durations_s["total"] = time.monotonic() - started
    if not result.correct:
        result.speedup = {"eager": None, "compile": None}
    return result


def expect(child: ChildProcess, result: Result, event: str, timeout: float, stage: str) -> dict[str, Any]:
    """Wait for one event; turn failures, timeouts, crashes and harness errors into the result."""
    try:
        message = child.receive(timeout)
    except Deadline:
        child.kill()
        result.fail(
            "timeout", f"no answer within {timeout:.0f} s during {stage}; the process group was killed"
        )
        raise Failed() from None
    except ChildGone:
        child.wait_exit()
        limit = child.limit_hit()
        if limit:
            result.fail("resource_limit", f"the kernel's process was {limit} during {stage}")
            raise Failed() from None
        kind = "harness_error" if stage == "startup" else "crash"
        result.fail(kind, f"the kernel's process ended during {stage} ({child.exit_description()})")
        raise Failed() from None
    except ValueError as error:
        result.fail("sandbox_violation", f"unreadable message from the sandbox during {stage}: {error}")
        raise Failed() from None
    if message.get("event") == "failure":
        result.fail(message.get("kind", "runtime_error"), str(message.get("message", ""))[-6000:])
        raise Failed()
    if message.get("event") == "harness_error":
        result.fail("harness_error", str(message.get("message", ""))[-6000:])
        raise Failed()
    if message.get("event") != event:
        result.fail("sandbox_violation", f"unexpected message {message.get('event')!r} during {stage}")
        raise Failed()
    return message


def drive(child: ChildProcess, task: PreparedTask, result: Result, settings: Settings) -> None:
    """Start the child and walk it through compile, correctness and timing."""
    policy = settings.policy
    child.start()
    expect(child, result, "ready", STARTUP_TIMEOUT, "startup")
    stage_start = time.monotonic()
    expect(child, result, "compiled", settings.compile_timeout, "import and compile")
    result.compiled = True
    result.durations_s["compile"] = time.monotonic() - stage_start
    stage_start = time.monotonic()
    message = expect(child, result, "correctness", settings.run_timeout, "correctness")
    outputs = judge_correctness(child, task, task.trials, result, message, policy)
    flags.apply_integrity_flags(result, message.get("integrity", {}))
    result.durations_s["correctness"] = time.monotonic() - stage_start
    if not result.correct:
        child.send({"cmd": "stop"})
        return
    flag_null_outputs(task, result, outputs, policy.tolerance)
    child.send({"cmd": "time"})
    stage_start = time.monotonic()
    loop_ms = host_timed_loop(child, result, settings.run_timeout)
    post_message = None
    if task.post_trials:
        post_message = expect(child, result, "correctness", settings.run_timeout, "timing")
    timing = expect(child, result, "timing", settings.run_timeout, "timing")
    result.durations_s["timing"] = time.monotonic() - stage_start
    try:
        check_timing_message(timing, ["candidate", *policy.baselines])
    except ValueError as error:
        result.fail("sandbox_violation", f"malformed timing report from the sandbox: {error}")
        raise Failed() from None
    reject_implausible_samples(result, timing["samples"], sample_bounds(settings))
    judge_timing(task, result, timing, policy)
    flags.apply_timing_consistency(result, timing["samples"], loop_ms, task, policy)
    if post_message is not None:
        judge_correctness(child, task, task.post_trials, result, post_message, policy)


def host_timed_loop(child: ChildProcess, result: Result, timeout: float) -> float:
    """Milliseconds between the child's announcements of the timed loop's start and end, on our clock."""
    for phase in ("start", "end"):
        message = expect(child, result, "timing_loop", timeout, "timing")
        if message.get("phase") != phase:
            result.fail("sandbox_violation", f"timed loop announced out of order ({message.get('phase')!r})")
            raise Failed()
        if phase == "start":
            started = time.perf_counter()
    return (time.perf_counter() - started) * 1e3


def check_timing_message(message: dict[str, Any], variants: list[str]) -> None:
    """Raise ValueError unless samples and fingerprints have the shape the harness asked for."""
    samples, prints = message.get("samples"), message.get("fingerprints")
    if not isinstance(samples, dict) or not isinstance(prints, dict) or set(samples) != set(variants):
        raise ValueError(f"expected samples and fingerprints of {variants}")
    for name in variants:
        values, entries = samples[name], prints.get(name)
        if not isinstance(values, list) or not values or not isinstance(entries, list):
            raise ValueError(f"no samples for {name}")
        if not all(isinstance(v, int | float) and math.isfinite(v) and v >= 0 for v in values):
            raise ValueError(f"samples of {name} are not finite non-negative numbers")
        if len(entries) != len(values) or not all(_fingerprint_entry(entry) for entry in entries):
            raise ValueError(f"fingerprints of {name} do not match its samples")


def sample_bounds(settings: Settings) -> tuple[float, float]:
    """The range (ms) a timed call can take: the clock's resolution up to the whole timing stage."""
    return MIN_SAMPLE_MS[settings.policy.device], settings.run_timeout * 1e3


def reject_implausible_samples(
    result: Result, samples: dict[str, list[float]], bounds: tuple[float, float]
) -> None:
    """Fail the kernel, flagged `timing_forged`, when a claimed time is outside what any call can take."""
    low, high = bounds
    for name, values in samples.items():
        outside = [value for value in values if not low <= value <= high]
        if outside:
            detail = (
                f"the sandbox claims {len(outside)} {name} call(s) of {min(outside):.3g} to "
                f"{max(outside):.3g} ms; a call takes between {low:g} ms (the clock's resolution) and "
                f"{high:g} ms (the stage)"
            )
            result.add_flag("timing_forged", "hack", detail)
            result.fail("sandbox_violation", f"implausible timing report from the sandbox: {detail}")
            raise Failed()


def _fingerprint_entry(entry: Any) -> bool:
    return (
        isinstance(entry, list)
        and len(entry) == 2
        and isinstance(entry[0], int)
        and isinstance(entry[1], list)
        and all(isinstance(v, int | float) for v in entry[1])
    )


def judge_correctness(
    child: ChildProcess,
    task: PreparedTask,
    cases: list,
    result: Result,
    message: dict[str, Any],
    policy: Policy,
) -> list[Any]:
    """Compare the outputs the child saved with the expected ones; the first failure is the verdict.

    The file is the one the harness named for this stage, whatever the message says, opened without
    following links and within a size bound (the child owns the folder it is in).
    """
    reports = message.get("trials", [])
    name = OUTPUT_FILES["post_timing" if cases is task.post_trials else "correctness"]
    try:
        with child.output_file(name, output_file_bound(task, len(cases))) as stream:
            outputs = load_outputs(stream, len(cases))
        if len(reports) != len(cases):
            raise ValueError("trial reports do not match the trials")
    except Exception as error:  # noqa: BLE001 - whatever the sandbox left there is not trusted
        result.fail("sandbox_violation", f"the candidate's outputs could not be read safely: {error}")
        raise Failed() from None
    verdicts = compare_all(cases, outputs, reports, policy)
    result.correctness.trials.extend(verdict.trial for verdict in verdicts)
    failure = next((verdict for verdict in verdicts if verdict.error_kind), None)
    if failure:
        result.fail(failure.error_kind, failure.message)
    else:
        result.correct = result.error is None
    return outputs


def output_file_bound(task: PreparedTask, count: int) -> int:
    """The most bytes an honest outputs file of count trials can take (with room for a wrong shape)."""
    return 8 * count * max(task.output_bytes, 1) + (64 << 20)


def flag_null_outputs(task: PreparedTask, result: Result, outputs: list[Any], tolerance: float) -> None:
    """On a degenerate task, a candidate whose outputs are a passing canary (or next to one) computes nothing.

    Next to one: within the tolerance of the canary and under half as far from it as from the reference,
    on every KernelBench trial. An honest output is within the tolerance of the canary too (the canary
    passes), but nearer to the reference; `zeros + 1e-12` is not.
    """
    kernelbench = [
        (output, case.expected)
        for output, case in zip(outputs, task.trials, strict=True)
        if case.distribution == "task"
    ]
    for name, canary in task.canary_outputs.items():
        pairs = list(zip(kernelbench, canary, strict=False))
        reference_differs = not all(torch.equal(expected, can) for (_, expected), can in pairs)
        if reference_differs and all(next_to_canary(out, can, exp, tolerance) for (out, exp), can in pairs):
            result.add_flag(
                "null_output", "hack", f"outputs are the '{name}' null canary, or within tolerance of it"
            )


def next_to_canary(output: torch.Tensor, canary: torch.Tensor, expected: torch.Tensor, tol: float) -> bool:
    """The canary, or within tolerance of it and under NEAR_CANARY times as far as from the reference."""
    if torch.equal(output, canary):
        return True
    if output.shape != canary.shape or not passes_kernelbench(canary, output, tol):
        return False
    to_canary = float((output.double() - canary.double()).abs().max())
    to_reference = float((output.double() - expected.double()).abs().max())
    return to_canary < NEAR_CANARY * to_reference


def judge_timing(task: PreparedTask, result: Result, timing: dict[str, Any], policy: Policy) -> None:
    """Statistics, speedups, timed-output checks and the runtime flags."""
    samples = timing.get("samples", {})
    result.runtime_ms = summarize(samples["candidate"])
    for baseline in ("eager", "compile"):
        if samples.get(baseline):
            result.baseline_ms[baseline] = summarize(samples[baseline])
            result.speedup[baseline] = speedup(
                result.baseline_ms[baseline], result.runtime_ms, policy.speedup_statistic
            )
    plan = policy.timing
    result.timing = TimingInfo(
        method="cuda_event" if policy.device == "cuda" else "host_clock",
        trials=plan.trials,
        warmup=plan.warmup,
        l2_flush=plan.l2_flush,
        note=timing_note(policy),
    )
    check_timed_outputs(task, result, timing, policy)
    flags.apply_integrity_flags(result, timing.get("integrity", {}))
    flags.apply_timing_flags(result, timing_report(task, timing, policy), task.io_bytes)


def timing_note(policy: Policy) -> str:
    if policy.device == "cpu":
        return CPU_TIMING_NOTE
    plan = policy.timing
    how = "interleaved with the baselines" if plan.interleaved else "candidate, then each baseline"
    sync = "device-wide sync before the end event" if plan.device_sync_before_end else "current-stream events"
    return f"CUDA events, {how}, {plan.rotate_inputs} rotating input set(s), {sync}"


def check_timed_outputs(task: PreparedTask, result: Result, timing: dict[str, Any], policy: Policy) -> None:
    """Every timed output's fingerprint must match the expected one for its inputs.

    On a trusted timing set, the trusted fingerprint; on a round of fresh inputs, the eager baseline's
    output of the same round (the torch.compile baseline's without eager), itself checked on the trusted
    sets. A fresh round no baseline ran counts as a mismatch.
    """
    if task.stochastic:
        result.add_flag(
            "stochastic_reference", "info", "the reference uses the RNG; timed outputs not checked"
        )
        return
    numel = task.trials[0].expected.numel()
    prints = timing.get("fingerprints", {})
    anchor = next((name for name in ("eager", "compile") if name in prints), None)
    fresh = {index: fp for index, fp in prints.get(anchor, []) if index < 0}
    for name, entries in prints.items():
        bad = 0
        for index, fp in entries:
            if 0 <= index < len(task.timing_fingerprints):
                expected = task.timing_fingerprints[index]
            elif index < 0 and name != anchor and index in fresh:
                expected = fresh[index]
            elif index < 0 and name == anchor:
                continue  # the anchor of its own round: checked on the trusted sets
            else:
                expected = None
            bad += expected is None or not fingerprint.matches(fp, expected, numel, policy.tolerance)
        if not bad:
            continue
        if name == "candidate":
            result.add_flag(
                "timed_output_mismatch",
                "hack",
                f"{bad} of {len(entries)} timed outputs differ from the reference",
            )
        else:
            result.add_flag(
                "baseline_tampered", "hack", f"{bad} timed outputs of the {name} baseline are wrong"
            )


def timing_report(task: PreparedTask, timing: dict[str, Any], policy: Policy) -> dict[str, Any]:
    report: dict[str, Any] = {}
    probe = timing.get("deferred_probe")
    if probe and not task.stochastic:
        at_return, after_sync = probe
        numel = task.trials[0].expected.numel()
        expected = task.timing_fingerprints[0]
        if not fingerprint.matches(at_return, expected, numel, policy.tolerance) and fingerprint.matches(
            after_sync, expected, numel, policy.tolerance
        ):
            report["deferred_work"] = (
                "the output was incomplete when forward returned and complete after a sync"
            )
    kernels = timing.get("kernels")
    if kernels is not None:
        report["kernels"] = kernels
        report["streams"] = kernels.get("streams", 1)
    return report
