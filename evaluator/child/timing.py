"""Inside either child: the timed call, the L2 flush, the deferred-work probe and the kernel profile.

The candidate's process and the reference process time with this same code, call for call: a device-wide
sync, the L2 flush, the start event, the call, (hardened) a device-wide sync, the end event. Each timed
output is fingerprinted outside the timed region, with a seed of its own that the candidate's process is
given only once the call has returned (its sampled positions and projection are unknown while forward
runs), so the harness can check every call against the reference's output for the same inputs.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from evaluator.child.fingerprint import fingerprint
from evaluator.child.integrity import harness_reads

# Bound before candidate code is imported, so later monkey-patching of torch or time cannot reach them.
_synchronize = torch.cuda.synchronize
_Event = torch.cuda.Event
_elapsed_time = torch.cuda.Event.elapsed_time
_record = torch.cuda.Event.record
_perf_counter_ns = time.perf_counter_ns
_clone = torch.Tensor.clone
_set = torch.Tensor.set_
_sum = torch.Tensor.sum
_empty = torch.empty
_setaffinity = getattr(os, "sched_setaffinity", None)
_getaffinity = getattr(os, "sched_getaffinity", None)
_spin = getattr(torch._C, "_cuda_sleep", None)  # a one-block kernel that spins for N cycles (CUDA builds)

L2_FLUSH_BYTES = 256 * 1024 * 1024
# After the flush the GPU spins this many cycles (about 250 µs at 2 GHz) before the start event. What hides a
# call's launch is the GPU work queued ahead of it: in KernelBench's loop, where nothing runs between calls,
# the ~90 µs flush covers a warm launch. Ours fingerprints and checks every call in between, which leaves the
# host's caches cold, and a Python-heavy launch (a Triton kernel's is some 20 µs warm) can then outlast the
# flush and be timed as the kernel's. Both sides hold alike; a kernel's own GPU time is unchanged.
HOLD_CYCLES = 500_000
LIBRARY_KERNEL = re.compile(
    r"^(void\s+)?(\(anonymous namespace\)::)?(at::|at_cuda_detail|cutlass|cublas|cudnn|cub::|sm\d+_|ampere_"
    r"|volta_|turing_|hopper_|nvjet|gemv|gemm|gemmk|gemmSN|splitKreduce|Memcpy|Memset|xmma|fft|vector_fft"
    r"|regular_fft|triton_(poi|red|per|tem)_|cutensor|implicit_convolve|cask_|dgrad|wgrad|fprop|nchwToNhwc"
    r"|nhwcToNchw|native::|elementwise_kernel|vectorized_elementwise|reduce_kernel|kernel_agent)",
)

Variant = Callable[..., Any]


@dataclass
class CallRecord:
    """One timed call: its seed, milliseconds, the output's fingerprint and (candidate) facts about it."""

    seed: int
    ms: float
    fingerprint: list[float]
    facts: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> list[Any]:
        return [self.seed, self.ms, self.fingerprint, self.facts]


class L2Flusher:
    """Writes a buffer larger than the L2 cache before each timed call (cold-cache timing), then holds the
    GPU busy for HOLD_CYCLES, so the call's launch is queued before the GPU reaches it."""

    def __init__(self, device: str, enabled: bool):
        self.buffer = None
        if enabled and device == "cuda":
            l2_bytes = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)
            size = max(L2_FLUSH_BYTES, 2 * l2_bytes)
            self.buffer = torch.empty(size // 8, dtype=torch.int64, device="cuda")

    def flush(self) -> None:
        if self.buffer is not None:
            self.buffer.fill_(42)
            if _spin is not None and HOLD_CYCLES:
                _spin(HOLD_CYCLES)


def synchronize(device: str) -> None:
    if device == "cuda":
        _synchronize()


def clone_inputs(inputs: list[Any]) -> list[Any]:
    return [_clone(value) if isinstance(value, torch.Tensor) else value for value in inputs]


PAGE_BYTES = 4096


def read_every_page(output: Any) -> None:
    """On the CPU, one byte of every page of a tensor output's memory read: memory that fills itself in
    when first read (protected pages and a fault handler, a mapping served on demand) does so here, inside
    the timed call, not at the harness's first read after the clock stopped. Both sides alike; a strided
    read of numel / 4096 bytes."""
    if type(output) is not torch.Tensor or output.device.type != "cpu" or output.layout != torch.strided:
        return
    storage = output.untyped_storage()
    if storage.nbytes():
        _sum(_set(_empty(0, dtype=torch.uint8), storage)[::PAGE_BYTES])


def timed_call(fn: Variant, inputs: list[Any], device: str, sync_before_end: bool, flusher: L2Flusher):
    """One timed call: (milliseconds, output). CUDA events with an optional device-wide sync before end; on
    the CPU the host clock, every page of the output read before it stops."""
    if device != "cuda":
        start_ns = _perf_counter_ns()
        output = fn(*inputs)
        read_every_page(output)
        return (_perf_counter_ns() - start_ns) / 1e6, output
    _synchronize()
    # The events exist before the flush is queued (as in KernelBench's loop): nothing but the call itself
    # runs on the host between the flush and the start event, so a launch shorter than the flush is hidden.
    start, end = _Event(enable_timing=True), _Event(enable_timing=True)
    flusher.flush()
    _record(start)
    output = fn(*inputs)
    if sync_before_end:
        _synchronize()
    _record(end)
    _synchronize()
    return _elapsed_time(start, end), output


@dataclass
class Loop:
    """What every timed call of one process shares: device, flush, sync rule, and where each kept call's
    fingerprint seed comes from (called with the call's index in its run, after the call has returned)."""

    device: str
    sync_before_end: bool
    flusher: L2Flusher
    print_seed: Callable[[int], int]
    observe: Callable[[Any, list[Any], Any], dict[str, Any]] | None = None  # candidate: facts per call
    before: Callable[[list[Any]], Any] | None = None  # candidate: what observe compares after the call
    ready: Callable[[], Any] | None = None  # hardened: the harness told, its clock started, before a call
    # Where this process's loops spent their time, summed per phase in ms: drawing a call's inputs (its seed
    # asked for included), `before`, the `go` handshake, the call (flush and syncs included), the
    # fingerprint (its seed asked for included), `observe`, the collection; warm-up calls as one phase;
    # `freeze`, the collection and freeze of the heap before a timed loop.
    # Each side reports its own, for the record only: nothing is judged on them (the harness's clock is).
    phases: dict[str, float] = field(default_factory=dict)

    def run(self, fn: Variant, feeds: Iterable[tuple[int, list[Any]]], keep: bool = True) -> list[CallRecord]:
        """Time fn on each (seed, inputs); fingerprint (and observe) each output outside the timed region.

        The cyclic collector is off meanwhile (in both children): a finaliser of the kernel's then runs only
        where the harness lets go of what a call left, before the next call's seed is known, never while its
        inputs are drawn. Collected there after every call, cycles a call made (perhaps holding device
        memory) never outlive it, as with the collector on (about 0.06 ms a call on a frozen heap)."""
        started = _perf_counter_ns()
        with collector_off():
            self.lap("freeze" if keep else "warmup", started)  # the collection before the heap is frozen
            return self.calls(fn, feeds, keep)

    def calls(self, fn: Variant, feeds: Iterable[tuple[int, list[Any]]], keep: bool) -> list[CallRecord]:
        records = []
        lap = self.lap if keep else lambda phase, since: self.lap("warmup", since)
        mark = _perf_counter_ns()
        for seed, inputs in feeds:
            mark = lap("inputs", mark)
            state = self.before(inputs) if self.before else None
            mark = lap("before", mark)
            if keep and self.ready is not None:
                synchronize(self.device)  # the inputs drawn before the harness's clock starts on the call
                self.ready()
                mark = lap("go", mark)
            milliseconds, output = timed_call(fn, inputs, self.device, self.sync_before_end, self.flusher)
            mark = lap("call", mark)
            with harness_reads():  # the output first: work deferred past the call has no time to land
                printed = fingerprint(output, self.print_seed(len(records))) if keep else None
                mark = lap("fingerprint", mark)
                facts = self.observe(output, inputs, state) if self.observe else {}
                if keep:
                    records.append(CallRecord(seed, milliseconds, printed, facts))
            mark = lap("observe", mark)
            del output, inputs, state  # before the next inputs are made: one input set alive at a time
            gc.collect()
            mark = lap("collect", mark)
        synchronize(self.device)
        lap("collect", mark)
        return records

    def lap(self, phase: str, since_ns: int) -> int:
        """Add the time since since_ns to phase; the clock's reading now, where the next phase starts."""
        now = _perf_counter_ns()
        self.phases[phase] = self.phases.get(phase, 0.0) + (now - since_ns) / 1e6
        return now

    def phases_ms(self) -> dict[str, float]:
        """The phases so far, rounded for a report."""
        return {phase: round(ms, 3) for phase, ms in self.phases.items()}


def now_ns() -> int:
    """The clock the loops' phases are read on (bound before candidate code ran)."""
    return _perf_counter_ns()


@contextlib.contextmanager
def pinned(cpu: int | None):
    """A round's calls on the harness's timing core (evaluator.trusted.cores): this thread, the one that
    launches, on that core alone until the round ends, then back on the CPUs it had. Both sides alike."""
    if cpu is None or _setaffinity is None:
        yield
        return
    before = _getaffinity(0)
    _setaffinity(0, {cpu})
    try:
        yield
    finally:
        _setaffinity(0, before)


def left_timing_cpu(cpu: int | None) -> bool:
    """Whether this thread is no longer on the timing core alone (the kernel moved it: a call of its own
    would then run on a core of its choosing, out of the comparison's conditions)."""
    return cpu is not None and _getaffinity is not None and _getaffinity(0) != {cpu}


def round_sources(message: dict[str, Any], ask: Callable[[str, str], dict[str, Any]]):
    """A round's fingerprint seeds and the handshake before each timed call: listed in the message, or
    (hardened rounds, which list neither) asked of the harness call by call: `go` just before the call, its
    fingerprint seed once it has returned. The harness's clock then spans every call, on either side."""
    if "print_seeds" in message or "fingerprint_seed" in message:
        return listed_print_seeds(message), None

    def print_seed(index: int) -> int:
        seed = ask("print_seed", "print_seed").get("seed")
        if not isinstance(seed, int):
            raise ValueError(f"a fingerprint seed that is not an integer: {seed!r}")
        return seed

    return print_seed, lambda: ask("go", "go")


def listed_print_seeds(message: dict[str, Any]) -> Callable[[int], int]:
    """A round's fingerprint seeds as the harness listed them, one per timed call (or one for every call)."""
    listed = message.get("print_seeds")
    if listed is None:
        seed = message["fingerprint_seed"]
        return lambda index: seed
    return lambda index: listed[index]


@contextlib.contextmanager
def collector_off():
    """The heap frozen and the cyclic collector off, as around every timed call; the correctness trials'
    calls run so too, so the collector's state cannot tell a kernel which of its calls is timed."""
    freeze_heap()
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def freeze_heap() -> None:
    """Everything alive now out of the cyclic collector's reach (it stays freed by reference counting).

    A process holding torch, torch._dynamo and the integrity snapshot tracks some 340,000 objects, and a full
    collection walks them all (about 0.1 s on the development machine): one falling inside a timed call would
    be charged to that call. Frozen before every loop of timed calls, in both children alike, a collection
    there walks only what the loop itself allocated. Freezing is constant-time; from the second loop on, the
    cycles left since the last freeze (a kernel's own, perhaps holding device memory) are collected first,
    which walks only what was made since. Whether this process froze its heap before is kept in FROZE, not
    asked of gc.get_freeze_count(), which walks every frozen object: about 22 ms for 390,000 of them with
    cold caches on the development machine, twice per round on the kernel's side and four times on the
    baselines' (2.14.0; on an H100's host some 18 and 65 ms a round of loops that no phase accounted for).
    """
    if FROZE:
        gc.collect()
    gc.freeze()
    FROZE[:] = [True]


FROZE: list[bool] = []  # one entry once this process has frozen its heap (a list: its identity never changes)


def deferred_work_probe(
    fn: Variant, inputs: list[Any], device: str, seed: int
) -> tuple[list[float], list[float]]:
    """Fingerprint an output right after return and again after a device-wide sync (or a pause on CPU)."""
    synchronize(device)
    output = fn(*inputs)
    with harness_reads():
        at_return = fingerprint(output, seed)  # ordered on the current stream only
    if device == "cuda":
        _synchronize()
    else:
        time.sleep(0.05)
    with harness_reads():
        return at_return, fingerprint(output, seed)


def profile_kernels(fn: Variant, inputs: list[Any], trace_dir: Path) -> dict[str, Any]:
    """Names and streams of the GPU kernels one call launches, read from a profiler trace."""
    from torch.profiler import ProfilerActivity, profile

    marker = torch.ones(1, device="cuda")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        marker.mul_(2)  # the first kernel: it runs on the current stream
        fn(*inputs)
        _synchronize()
    trace_path = trace_dir / "trace.json"
    prof.export_chrome_trace(str(trace_path))
    events = json.loads(trace_path.read_text()).get("traceEvents", [])
    trace_path.unlink(missing_ok=True)
    kernels = [event for event in events if event.get("cat") == "kernel"]
    kernels.sort(key=lambda event: event.get("ts", 0))
    if not kernels:
        return {"names": [], "custom": [], "streams": 1}
    candidate_kernels = kernels[1:]  # without the marker
    names = sorted({event.get("name", "") for event in candidate_kernels})
    custom = [name for name in names if not LIBRARY_KERNEL.search(name)]
    streams = {event.get("args", {}).get("stream") for event in kernels} - {None}
    return {"names": names[:50], "custom": custom[:20], "streams": len(streams) or 1}


def peak_memory(device: str) -> dict[str, int]:
    """This process's peak host memory (bytes) and, on a GPU, the most its allocator ever reserved and the
    most its tensors ever held (the difference is the allocator's cache and fragmentation)."""
    import resource

    peaks = {"host_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    if device == "cuda":
        peaks["gpu_reserved_bytes"] = int(torch.cuda.max_memory_reserved())
        peaks["gpu_allocated_bytes"] = int(torch.cuda.max_memory_allocated())
    return peaks
