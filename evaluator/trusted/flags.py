"""Flags: static patterns in the kernel source and the rules that turn runtime observations into flags."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from evaluator.policy import TASK_MODULE
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
        r"^\s*(import|from)\s+(threading|multiprocessing|concurrent|subprocess)\b|std::thread|pthread_create"
        r"|\bos\.(fork|forkpty|posix_spawnp?|spawn\w*)\b|\bjit\.fork\b",
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
    """Runtime evidence from the candidate's process: state it changed or left behind, threads."""
    if integrity.get("precision_changed"):
        changed = ", ".join(sorted(integrity["precision_changed"]))
        upgrade(
            result, "precision_flags_changed", "hack", f"precision settings changed at runtime: {changed}"
        )
    replaced = sorted(integrity.get("functions_replaced", []))
    torch_names = [name for name in replaced if not name.startswith(TASK_MODULE)]
    task_names = [name for name in replaced if name.startswith(TASK_MODULE)]
    if torch_names:
        upgrade(
            result, "torch_patched", "hack", f"functions replaced at runtime: {', '.join(torch_names[:12])}"
        )
    if task_names:
        upgrade(
            result,
            "task_patched",
            "hack",
            f"the task or the reference changed at runtime: {', '.join(task_names[:12])}",
        )
    left = [*integrity.get("hooks", []), *integrity.get("thread_settings", [])]
    left += [f"{name} (its kernels changed)" for name in integrity.get("operators_overridden", [])]
    if left:
        upgrade(
            result, "state_left_behind", "hack", f"the kernel changed global state: {'; '.join(left[:12])}"
        )
    if integrity.get("new_threads"):
        upgrade(
            result, "threads", "suspect", f"{integrity['new_threads']} Python thread(s) started by the kernel"
        )


def apply_timing_flags(result: Result, report: dict[str, Any], io_bytes: int) -> None:
    """Deferred work, timed outputs that do not match, side streams, library-only kernels, roofline."""
    if report.get("deferred_work"):
        upgrade(result, "deferred_work", "hack", report["deferred_work"])
    streams, reference = report.get("streams", 1), report.get("reference_streams", 1)
    if streams > reference:  # more than the task's own forward (cuDNN may use streams of its own)
        detail = f"kernels ran on {streams} CUDA streams; the task's reference forward on {reference}"
        upgrade(result, "side_stream", "suspect", detail)
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


def roofline_floor_ms(gpu_name: str, io_bytes: int) -> float | None:
    """Time to move the inputs and output once at the GPU's peak bandwidth; None if the GPU is unknown."""
    for fragment, bandwidth in PEAK_BANDWIDTH.items():
        if fragment in gpu_name:
            return io_bytes / bandwidth * 1e3
    return None


def upgrade(result: Result, code: str, severity: str, detail: str, join: bool = False) -> None:
    """Add a flag, or raise the severity of one already there with this evidence: its detail replaced (a
    static flag's, by the runtime's), or with `join` kept and this detail added after it."""
    order = {"info": 0, "suspect": 1, "hack": 2}
    for flag in result.flags:
        if flag.code == code:
            if order[severity] >= order[flag.severity]:
                flag.severity = severity
                flag.detail = f"{flag.detail}; {detail}" if join else detail
            return
    result.add_flag(code, severity, detail)
