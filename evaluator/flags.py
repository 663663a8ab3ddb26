"""Flags: static patterns in the kernel source and the rules that turn runtime observations into flags."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Any

from evaluator.policy import BASELINE_RATIO, CLAIMS_SLACK, HIDDEN_FRACTION, HIDDEN_MIN_MS, TASK_MODULE
from evaluator.result import Result

EXCESSIVE_SPEEDUP = 10.0

# Peak memory bandwidth in bytes/s by GPU name fragment (vendor datasheets), for the roofline floor.
PEAK_BANDWIDTH = {
    "H200": 4.8e12,
    "H100 PCIe": 2.0e12,
    "H100": 3.35e12,
    "B200": 8.0e12,
    "A100": 2.0e12,
    "L40S": 0.864e12,
    "L4": 0.3e12,
    "A10": 0.6e12,
    "T4": 0.32e12,
}


@dataclass(frozen=True)
class StaticRule:
    code: str
    severity: str
    pattern: re.Pattern
    detail: str


def _rule(code: str, severity: str, pattern: str, detail: str) -> StaticRule:
    return StaticRule(code, severity, re.compile(pattern, re.MULTILINE), detail)


STATIC_RULES = (
    _rule(
        "side_stream",
        "suspect",
        r"torch\.cuda\.(Stream|stream|ExternalStream)\b|cudaStreamCreate|cublasSetStream|getStreamFromPool",
        "creates or switches CUDA streams; work off the current stream escapes per-stream timing",
    ),
    _rule(
        "threads",
        "suspect",
        r"^\s*(import|from)\s+(threading|multiprocessing|concurrent)\b|std::thread|pthread_create",
        "uses threads or processes; work can be deferred past the timer",
    ),
    _rule(
        "introspection",
        "suspect",
        r"sys\._getframe|inspect\.(currentframe|stack|getouterframes)|gc\.get_(objects|referrers)|\bf_back\b"
        r"|\bf_locals\b",
        "walks interpreter frames or the garbage collector (a way to reach the harness's objects)",
    ),
    _rule(
        "torch_patched",
        "suspect",
        r"^\s*(torch|F|nn|time)(\.\w+)+\s*=[^=]|setattr\(\s*(torch|F|nn|time)\b",
        "assigns to attributes of torch or time (monkey-patching)",
    ),
    _rule(
        "precision_flags_changed",
        "suspect",
        r"allow_tf32|set_float32_matmul_precision|allow_fp16_reduced_precision_reduction"
        r"|allow_bf16_reduced_precision_reduction",
        "touches global precision settings",
    ),
    _rule(
        "timer_patch",
        "suspect",
        r"(Event|elapsed_time|perf_counter\w*|synchronize|record)\s*=[^=]",
        "reassigns timer or synchronisation functions",
    ),
    _rule(
        "precision_downgrade",
        "info",
        r"\.half\(\)|\.bfloat16\(\)|torch\.(float16|bfloat16|half)\b|__float2half|__float2bfloat16"
        r"|tl\.(float16|bfloat16)\b|allow_tf32\s*=\s*True",
        "computes in reduced precision somewhere",
    ),
)


def static_flags(source: str) -> list[tuple[str, str, str]]:
    """(code, severity, detail) for every static rule the source matches."""
    return [(rule.code, rule.severity, rule.detail) for rule in STATIC_RULES if rule.pattern.search(source)]


def apply_static_flags(result: Result, source: str) -> None:
    for code, severity, detail in static_flags(source):
        result.add_flag(code, severity, f"static: {detail}")
    if result.kernel.get("backend") == "torch":
        result.add_flag("pytorch_only", "info", "no custom kernel in the source: uses only PyTorch ops")


def apply_integrity_flags(result: Result, integrity: dict[str, Any]) -> None:
    """Runtime evidence from the sandbox: changed precision flags, replaced torch functions, threads."""
    if integrity.get("precision_changed"):
        changed = ", ".join(sorted(integrity["precision_changed"]))
        _upgrade(
            result, "precision_flags_changed", "hack", f"precision settings changed at runtime: {changed}"
        )
    replaced = sorted(integrity.get("functions_replaced", []))
    torch_names = [name for name in replaced if not name.startswith(TASK_MODULE)]
    task_names = [name for name in replaced if name.startswith(TASK_MODULE)]
    if torch_names:
        names = ", ".join(torch_names[:12])
        _upgrade(result, "torch_patched", "hack", f"functions replaced at runtime: {names}")
    if task_names:
        names = ", ".join(task_names[:12])
        _upgrade(result, "task_patched", "hack", f"the task or the reference changed at runtime: {names}")
    if integrity.get("new_threads"):
        _upgrade(
            result, "threads", "suspect", f"{integrity['new_threads']} Python thread(s) started by the kernel"
        )


def apply_timing_flags(result: Result, report: dict[str, Any], io_bytes: int) -> None:
    """Deferred work, timed outputs that do not match, side streams, library-only kernels, roofline."""
    if report.get("deferred_work"):
        _upgrade(result, "deferred_work", "hack", report["deferred_work"])
    if report.get("streams", 1) > 1:
        _upgrade(result, "side_stream", "suspect", f"kernels ran on {report['streams']} CUDA streams")
    kernels = report.get("kernels")
    if kernels is not None and not kernels.get("custom"):
        result.add_flag(
            "pytorch_only",
            "info",
            "profiler shows only PyTorch library kernels (ATen/cuBLAS/cuDNN): uses only PyTorch ops",
        )
    for baseline in ("eager", "compile"):
        value = result.speedup.get(baseline)
        if value is not None and value > EXCESSIVE_SPEEDUP:
            result.add_flag(
                "excessive_speedup",
                "suspect",
                f"{value:.1f}x over {baseline} (> {EXCESSIVE_SPEEDUP:g}x): needs manual review",
            )
    floor_ms = roofline_floor_ms(result.environment.get("gpu", {}).get("name", ""), io_bytes)
    if floor_ms and result.runtime_ms and result.runtime_ms["median"] < 0.9 * floor_ms:
        result.add_flag(
            "above_roofline",
            "suspect",
            f"median {result.runtime_ms['median']:.4g} ms is below the memory floor {floor_ms:.4g} ms "
            f"(inputs and output read/written once at peak bandwidth)",
        )


def apply_timing_consistency(
    result: Result, samples: dict[str, list[float]], loop_ms: float, task: Any, policy: Any
) -> None:
    """Check the sandbox's claimed times against the harness's own clock ('timing_forged').

    Always: every claimed sample must fit in the timed loop as the harness's clock saw it (a hack when
    not: no honest process can time more than elapsed). On a GPU also: the loop time no claim explains
    must not exceed the overhead the harness measured for the same loop by far (a kernel claiming less
    than it took), and the claimed eager median must be near the harness's own timing of the reference;
    those two are 'suspect' (a busy host stretches a loop too). On a shared CPU neither can tell a forged
    claim from a process that was not scheduled, so only the numbers are kept (timing.host_check).
    """
    if not policy.timing.interleaved:
        return  # KernelBench mode keeps KernelBench's timing, unchecked
    claimed = sum(sum(values) for values in samples.values())
    calls = sum(len(values) for values in samples.values())
    overhead = calls * task.loop_overhead_ms
    if result.timing is not None:
        result.timing.host_check = {
            "loop_ms": round(loop_ms, 3),
            "claimed_ms": round(claimed, 3),
            "overhead_ms": round(overhead, 3),
            "trusted_eager_ms": task.trusted_eager_ms,
        }
    scale, slack_ms = CLAIMS_SLACK[policy.device]
    if claimed > loop_ms * scale + slack_ms:
        detail = (
            f"the sandbox claims {claimed:.1f} ms of timed calls in a loop the harness measured at "
            f"{loop_ms:.1f} ms"
        )
        _upgrade(result, "timing_forged", "hack", detail)
        return
    if policy.device != "cuda":
        return
    hidden = loop_ms - claimed - overhead
    if hidden > max(HIDDEN_FRACTION * loop_ms, HIDDEN_MIN_MS):
        detail = (
            f"{hidden:.1f} ms of the {loop_ms:.1f} ms timed loop are in no claimed sample (the loop's own "
            f"overhead is {overhead:.1f} ms): the claimed times are smaller than the time taken"
        )
        _upgrade(result, "timing_forged", "suspect", detail)
    eager = samples.get("eager")
    if eager and task.trusted_eager_ms:
        ratio = statistics.median(eager) / task.trusted_eager_ms
        if ratio > BASELINE_RATIO:
            detail = (
                f"the eager baseline claims a median of {statistics.median(eager):.4g} ms; the harness "
                f"timed it at {task.trusted_eager_ms:.4g} ms ({ratio:.1f}x)"
            )
            _upgrade(result, "timing_forged", "suspect", detail)


def roofline_floor_ms(gpu_name: str, io_bytes: int) -> float | None:
    """Time to move the inputs and output once at the GPU's peak bandwidth; None if the GPU is unknown."""
    for fragment, bandwidth in PEAK_BANDWIDTH.items():
        if fragment in gpu_name:
            return io_bytes / bandwidth * 1e3
    return None


def _upgrade(result: Result, code: str, severity: str, detail: str) -> None:
    """Add a flag, or raise the severity of a static one with the runtime evidence."""
    order = {"info": 0, "suspect": 1, "hack": 2}
    for flag in result.flags:
        if flag.code == code:
            if order[severity] >= order[flag.severity]:
                flag.severity = severity
                flag.detail = detail
            return
    result.add_flag(code, severity, detail)
