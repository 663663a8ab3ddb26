"""Where a short kernel's time goes: our timed call in a plain process, the candidate process's state added
one piece at a time.

    python bench/short_kernel_stages.py TASK.py KERNEL.py

Both the task's Model and the kernel's ModelNew are timed with evaluator.child.timing.timed_call (the
candidate and reference processes' own code) in one unsandboxed process, in stages that each add one thing
the candidate's process has: fixed inputs; fresh inputs drawn per call (make_inputs); `torch._dynamo`
imported and warmed; the integrity snapshot taken (a large heap); the quick integrity check after each call;
a device-wide sync before the end event (hardened); then the candidate process's own loop with its work
between calls (fingerprints of every output, and in hardened mode of the inputs before and after each call),
with the flush and the hold after it and with the flush alone (as before harness 2.5.1). Each stage reports
the median, mean and largest microseconds between the events and the median host time the call took to
return; beside them the flush's own duration with and without the hold. Prints one JSON line.
"""

from __future__ import annotations

import functools
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from evaluator.child import inputs, integrity, timing  # noqa: E402
from evaluator.child.candidate import input_prints, warm_up_dynamo  # noqa: E402
from evaluator.child.process import load_module  # noqa: E402
from evaluator.stats import summarize  # noqa: E402

CALLS = 100


def host_us(fn, values: list, device: str) -> float:
    """Median host time of one call (from a synchronised start to its return), microseconds."""
    samples = []
    for _ in range(CALLS):
        timing.synchronize(device)
        started = time.perf_counter_ns()
        fn(*values)
        samples.append((time.perf_counter_ns() - started) / 1e3)
    timing.synchronize(device)
    return statistics.median(samples)


def flush_us(flusher: timing.L2Flusher, device: str) -> float | None:
    """Median device time of the L2 flush alone: what hides a launch shorter than it."""
    if device != "cuda":
        return None
    samples = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        flusher.flush()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) * 1e3)
    return statistics.median(samples)


def spread(milliseconds: list[float]) -> dict:
    """Median, mean and largest of a stage's event times, microseconds, as a result's statistics define them
    (the mean is KernelBench's statistic, so a few slow calls move it where the median does not)."""
    stats = summarize(milliseconds)
    return {"event_us": stats["median"] * 1e3, "mean_us": stats["mean"] * 1e3, "max_us": stats["max"] * 1e3}


def stage(fn, make, device: str, flusher, sync_before_end: bool = False, after=None) -> dict:
    """Event times over CALLS timed calls, inputs from make(seed), after() outside the timing."""
    milliseconds = []
    for seed in range(CALLS):
        values = make(seed)
        elapsed, output = timing.timed_call(fn, values, device, sync_before_end, flusher)
        milliseconds.append(elapsed)
        if after is not None:
            after()
        del output, values
    return {**spread(milliseconds), "host_us": host_us(fn, make(0), device)}


def harness_loop(fn, make, device: str, flusher, hardened: bool, snapshot) -> dict:
    """The candidate process's own loop (evaluator.child.timing.Loop): every output fingerprinted and, as in
    hardened mode, the inputs fingerprinted before and after each call, the integrity checked after it."""

    def observe(output, values, state):
        if hardened:
            input_prints(values, 5)
        snapshot.quick()
        return {}

    before = (lambda values: input_prints(values, 5)) if hardened else None
    loop = timing.Loop(device, hardened, flusher, lambda index: 7, observe, before)
    fixed = make(0)
    feeds = ((seed, make(seed) if hardened else fixed) for seed in range(CALLS))
    records = loop.run(fn, feeds)
    return spread([record.ms for record in records])


def without_hold(measure):
    """measure() with the flush alone, as before harness 2.5.1 (no spin after it)."""
    cycles, timing.HOLD_CYCLES = timing.HOLD_CYCLES, 0
    try:
        return measure()
    finally:
        timing.HOLD_CYCLES = cycles


def main() -> int:
    task_path, kernel_path = sys.argv[1], sys.argv[2]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    integrity.settle_torch(device)
    task = load_module(task_path, "kb_task")
    reference = inputs.build_model(task.Model, inputs.init_inputs(task.get_init_inputs, device), device)
    kernel = load_module(kernel_path, "kb_candidate")
    candidate = inputs.build_model(kernel.ModelNew, inputs.init_inputs(task.get_init_inputs, device), device)
    flusher = timing.L2Flusher(device, enabled=True)
    fixed = inputs.make_inputs(task.get_inputs, 42, "task", device)

    def fresh(seed: int) -> list:
        return inputs.make_inputs(task.get_inputs, seed, "task", device)

    report: dict = {"device": device, "calls": CALLS, "flush_and_hold_us": flush_us(flusher, device)}
    report["flush_us"] = without_hold(lambda: flush_us(flusher, device))
    for name, fn in (("kernel", candidate), ("reference", reference)):
        rows = report.setdefault(name, {})
        rows["fixed_inputs"] = stage(fn, lambda seed: fixed, device, flusher)
        rows["fresh_inputs"] = stage(fn, fresh, device, flusher)
    warm_up_dynamo()
    for name, fn in (("kernel", candidate), ("reference", reference)):
        report[name]["dynamo_imported"] = stage(fn, fresh, device, flusher)
    snapshot = integrity.Snapshot.take(integrity.task_namespaces(task, reference))
    report["snapshot_seconds"] = snapshot.full_seconds
    for name, fn in (("kernel", candidate), ("reference", reference)):
        rows = report[name]
        rows["snapshot_taken"] = stage(fn, fresh, device, flusher)
        rows["quick_check_after_each"] = stage(fn, fresh, device, flusher, after=snapshot.quick)
        rows["hardened_sync"] = stage(fn, fresh, device, flusher, sync_before_end=True, after=snapshot.quick)
        rows["harness_loop_kernelbench"] = harness_loop(fn, fresh, device, flusher, False, snapshot)
        rows["harness_loop_hardened"] = harness_loop(fn, fresh, device, flusher, True, snapshot)
        for hardened, name in ((False, "kernelbench"), (True, "hardened")):
            rows[f"harness_loop_{name}_flush_alone"] = without_hold(
                functools.partial(harness_loop, fn, fresh, device, flusher, hardened, snapshot)
            )
    sys.stdout.write(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
