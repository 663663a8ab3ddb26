"""Inside the sandbox: time the candidate and the baselines, interleaved, and watch the timed outputs."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from evaluator.fingerprint import fingerprint
from evaluator.policy import TimingPlan

# Bound before candidate code is imported, so later monkey-patching of torch or time cannot reach them.
_synchronize = torch.cuda.synchronize
_Event = torch.cuda.Event
_elapsed_time = torch.cuda.Event.elapsed_time
_record = torch.cuda.Event.record
_perf_counter_ns = time.perf_counter_ns
_clone = torch.Tensor.clone

L2_FLUSH_BYTES = 256 * 1024 * 1024
LIBRARY_KERNEL = re.compile(
    r"^(void\s+)?(\(anonymous namespace\)::)?(at::|at_cuda_detail|cutlass|cublas|cudnn|cub::|sm\d+_|ampere_"
    r"|volta_|turing_|hopper_|nvjet|gemv|gemm|gemmk|gemmSN|splitKreduce|Memcpy|Memset|xmma|fft|vector_fft"
    r"|regular_fft|triton_(poi|red|per|tem)_|cutensor|implicit_convolve|cask_|dgrad|wgrad|fprop|nchwToNhwc"
    r"|nhwcToNchw|native::|elementwise_kernel|vectorized_elementwise|reduce_kernel|kernel_agent)",
)

Variant = Callable[..., Any]


@dataclass
class TimingRecord:
    """Per variant: the samples (ms) and, per timed output, (input set, fingerprint).

    The input set is the index of a trusted timing set, or -(round + 1) for a round on fresh inputs, whose
    outputs are compared across variants. loop_ms is the host-clock time of the whole timed loop.
    """

    samples: dict[str, list[float]] = field(default_factory=dict)
    fingerprints: dict[str, list[tuple[int, list[float]]]] = field(default_factory=dict)
    loop_ms: float = 0.0


class L2Flusher:
    """Writes a buffer larger than the L2 cache before each timed call (cold-cache timing)."""

    def __init__(self, device: str, enabled: bool):
        self.buffer = None
        if enabled and device == "cuda":
            l2_bytes = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)
            size = max(L2_FLUSH_BYTES, 2 * l2_bytes)
            self.buffer = torch.empty(size // 8, dtype=torch.int64, device="cuda")

    def flush(self) -> None:
        if self.buffer is not None:
            self.buffer.fill_(42)


def synchronize(device: str) -> None:
    if device == "cuda":
        _synchronize()


def clone_inputs(inputs: list[Any]) -> list[Any]:
    return [_clone(value) if isinstance(value, torch.Tensor) else value for value in inputs]


def contiguous_copies(inputs: list[Any]) -> list[Any]:
    """Fresh contiguous tensors with the same values, whatever layout the originals have now."""
    return [
        _clone(value, memory_format=torch.contiguous_format) if isinstance(value, torch.Tensor) else value
        for value in inputs
    ]


def timed_call(fn: Variant, inputs: list[Any], device: str, plan: TimingPlan, flusher: L2Flusher):
    """One timed call: (milliseconds, output). CUDA events with an optional device-wide sync before end."""
    if device != "cuda":
        start_ns = _perf_counter_ns()
        output = fn(*inputs)
        return (_perf_counter_ns() - start_ns) / 1e6, output
    _synchronize()
    flusher.flush()
    start, end = _Event(enable_timing=True), _Event(enable_timing=True)
    _record(start)
    output = fn(*inputs)
    if plan.device_sync_before_end:
        _synchronize()
    _record(end)
    _synchronize()
    return _elapsed_time(start, end), output


def fresh_inputs(get_inputs: Callable[[], Any], device: str, seed: int) -> Callable[[int], list[Any]]:
    """New inputs per round from the task's own get_inputs() (so they stay valid inputs), made on the device.

    Floating tensors in fp32 and integer tensors kept, as the trusted side draws them. get_inputs is the
    function itself, taken before candidate code ran (not looked up on a module the candidate can reach).
    """

    def make(round_index: int) -> list[Any]:
        torch.manual_seed(seed + round_index)
        with torch.device(device):
            values = list(get_inputs())
        return [
            (value.to(device, torch.float32) if value.is_floating_point() else value.to(device))
            if isinstance(value, torch.Tensor)
            else value
            for value in values
        ]

    return make


def warm_up(variants: dict[str, Variant], input_sets: list[list[Any]], plan: TimingPlan, device: str) -> None:
    """Each warm-up call on copies of its own: nothing a variant does to its inputs reaches another."""
    for name, fn in variants.items():
        count = plan.warmup if name == "candidate" else plan.baseline_warmup
        for index in range(count):
            fn(*clone_inputs(input_sets[index % len(input_sets)]))
        synchronize(device)
    if device == "cuda":
        torch.cuda.empty_cache()


class InputSlots:
    """A few fixed buffers the input sets are copied into before each call, in a cycle of SLOTS.

    The slot cycle (3) and the input-set cycle (2 or 4) differ, so one address sees different data over
    time: an output cache keyed by address returns a stale answer, and the fingerprint check catches it.
    """

    SLOTS = 3

    def __init__(self, template: list[Any]):
        self.buffers = [clone_inputs(template) for _ in range(self.SLOTS)]
        self.calls = 0

    def fill(self, values: list[Any], set_index: int) -> list[Any]:
        """Copy values into the next slot; the slots ignore set_index (one address sees every set)."""
        slot = self.buffers[self.calls % self.SLOTS]
        self.calls += 1
        for target, value in zip(slot, values, strict=True):
            if isinstance(target, torch.Tensor):
                target.copy_(value)
        return [
            target if isinstance(target, torch.Tensor) else value
            for target, value in zip(slot, values, strict=True)
        ]


class OwnInputs:
    """Without input slots (KernelBench's timing): the same tensors every call, but each variant its own."""

    def __init__(self, input_sets: list[list[Any]]):
        self.sets = [clone_inputs(values) for values in input_sets]

    def fill(self, values: list[Any], set_index: int) -> list[Any]:
        return self.sets[set_index] if set_index >= 0 else clone_inputs(values)


def variant_inputs(names: list[str], input_sets: list[list[Any]], plan: TimingPlan) -> dict[str, Any]:
    """Per variant, what hands it its inputs: input slots (plan.clone_inputs) or its own input sets."""
    if plan.clone_inputs:
        return {name: InputSlots(input_sets[0]) for name in names}
    return {name: OwnInputs(input_sets) for name in names}


def run_timing(
    variants: dict[str, Variant],
    input_sets: list[list[Any]],
    plan: TimingPlan,
    device: str,
    fresh: Callable[[int], list[Any]] | None = None,
    on_loop: Callable[[str], None] | None = None,
) -> TimingRecord:
    """Time every variant per the plan; fingerprint every timed output outside the timed region.

    With `fresh` (and plan.fresh_inputs), every round after the first rotation of the trusted input sets
    runs on new inputs fresh(round), made outside the timed region: a cache keyed on input contents never
    hits. `on_loop('start')` and `on_loop('end')` bracket the timed loop, for the harness's own clock.
    Every input a variant gets is copied from contiguous copies of input_sets taken before any call: a
    variant that re-lays-out or changes its inputs changes its own copies only.
    """
    flusher = L2Flusher(device, plan.l2_flush)
    names = list(variants)
    input_sets = [contiguous_copies(values) for values in input_sets]
    feeds = variant_inputs(names, input_sets, plan)
    warm_up(variants, input_sets, plan, device)
    record = TimingRecord({name: [] for name in variants}, {name: [] for name in variants})
    schedule = (
        [(index, names[index % len(names) :] + names[: index % len(names)]) for index in range(plan.trials)]
        if plan.interleaved
        else [(index, [name]) for name in names for index in range(plan.trials + plan.discard_first)]
    )
    use_fresh = fresh is not None and plan.fresh_inputs
    if on_loop:
        on_loop("start")
    started = _perf_counter_ns()
    for index, order in schedule:
        set_index = index % len(input_sets)
        values = input_sets[set_index]
        if use_fresh and index >= len(input_sets):
            set_index, values = -(index + 1), fresh(index)
        for name in order:
            inputs = feeds[name].fill(values, set_index)
            milliseconds, output = timed_call(variants[name], inputs, device, plan, flusher)
            if not plan.interleaved and index < plan.discard_first:
                continue
            record.samples[name].append(milliseconds)
            record.fingerprints[name].append((set_index, fingerprint(output)))
            del output
    synchronize(device)
    record.loop_ms = (_perf_counter_ns() - started) / 1e6
    if on_loop:
        on_loop("end")
    return record


def deferred_work_probe(fn: Variant, inputs: list[Any], device: str) -> tuple[list[float], list[float]]:
    """Fingerprint an output right after return and again after a device-wide sync (or a pause on CPU)."""
    inputs = clone_inputs(inputs)
    synchronize(device)
    output = fn(*inputs)
    at_return = fingerprint(output)  # ordered on the current stream only
    if device == "cuda":
        _synchronize()
    else:
        time.sleep(0.05)
    return at_return, fingerprint(output)


def profile_kernels(fn: Variant, inputs: list[Any], trace_dir: Path) -> dict[str, Any]:
    """Names and streams of the GPU kernels one call launches, read from a profiler trace."""
    from torch.profiler import ProfilerActivity, profile

    inputs = clone_inputs(inputs)
    marker = torch.ones(1, device="cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        marker.mul_(2)  # the first kernel: it runs on the current stream
        fn(*inputs)
        _synchronize()
    trace_path = trace_dir / "trace.json"
    prof.export_chrome_trace(str(trace_path))
    events = json.loads(trace_path.read_text()).get("traceEvents", [])
    kernels = [event for event in events if event.get("cat") == "kernel"]
    kernels.sort(key=lambda event: event.get("ts", 0))
    if not kernels:
        return {"names": [], "custom": [], "streams": 1}
    candidate_kernels = kernels[1:]  # without the marker
    names = sorted({event.get("name", "") for event in candidate_kernels})
    custom = [name for name in names if not LIBRARY_KERNEL.search(name)]
    streams = {event.get("args", {}).get("stream") for event in kernels} - {None}
    return {"names": names[:50], "custom": custom[:20], "streams": len(streams) or 1}
