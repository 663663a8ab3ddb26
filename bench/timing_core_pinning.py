"""Does the core a timed process runs on move its launch-bound timings? Two processes alternate timed rounds.

    python bench/timing_core_pinning.py KERNELBENCH_CHECKOUT [--problems 3/37,3/41] [--rounds 12] [--calls 4]

Each problem's Model is built in two spawned processes (A and B, the same code: an identity comparison),
which time calls with CUDA events in alternating rounds, as the harness's two sides do. Three modes, each
three times: `free` (the scheduler places every process), `pinned` (each side's timing thread on one
shared core during its round; everything else, the parent and the idle side, kept off that core and its
hyperthread siblings), `pinned_apart` (as `pinned`, but A and B get different cores). Per round it prints
the side, the CPU it ran on and its median; per mode the A/B speedup (median over median) and the spread
of round medians. A whole-round step in one side's times that follows its CPU is what pinning removes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import multiprocessing as mp
import os
import statistics
import sys
from pathlib import Path

logger = logging.getLogger("bench.pinning")


def current_cpu() -> int:
    """The CPU this thread last ran on (field 39 of /proc/thread-self/stat)."""
    text = Path("/proc/thread-self/stat").read_text()
    return int(text.rsplit(")", 1)[1].split()[36])


def siblings(cpu: int) -> set[int]:
    """The CPU and its hyperthread siblings."""
    path = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
    found = {cpu}
    for part in path.read_text().strip().split(","):
        first, _, last = part.partition("-")
        found |= set(range(int(first), int(last or first) + 1))
    return found


def load_problem(path: str):
    """A KernelBench problem file as a module."""
    spec = importlib.util.spec_from_file_location("kb_problem", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def side(path: str, conn, rest: list[int]) -> None:
    """One timed process: build the model, then answer ('round', n, cpu or None) with (times, cpus)."""
    import torch

    module = load_problem(path)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).cuda().eval()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    with torch.no_grad():
        for _ in range(5):
            model(*inputs)
    torch.cuda.synchronize()
    conn.send("ready")
    while True:
        message = conn.recv()
        if message is None:
            return
        _, calls, core = message
        if core is not None:
            os.sched_setaffinity(0, {core})
        cpus, times = {current_cpu()}, []
        with torch.no_grad():
            for _ in range(calls):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                model(*inputs)
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end))
                cpus.add(current_cpu())
        if core is not None:
            os.sched_setaffinity(0, set(rest))
        conn.send((times, sorted(cpus)))


def run_mode(path: str, mode: str, rounds: int, calls: int) -> dict:
    """One comparison: two fresh processes, `rounds` alternating rounds of `calls` calls each, in `mode`."""
    everything = sorted(os.sched_getaffinity(0))
    core_a, core_b = everything[-1], everything[-3]
    reserved = siblings(core_a) | (siblings(core_b) if mode == "pinned_apart" else set())
    rest = [cpu for cpu in everything if cpu not in reserved] if mode != "free" else everything
    os.sched_setaffinity(0, set(rest))
    context = mp.get_context("spawn")
    pipes, procs = [], []
    for _ in range(2):
        mine, theirs = context.Pipe()
        proc = context.Process(target=side, args=(path, theirs, rest))
        proc.start()
        pipes.append(mine)
        procs.append(proc)
    for conn in pipes:
        if conn.recv() != "ready":
            raise RuntimeError("a timed process did not start")
    cores = {"free": (None, None), "pinned": (core_a, core_a), "pinned_apart": (core_a, core_b)}[mode]
    samples = {"A": [], "B": []}
    rows = []
    for number in range(rounds):
        for name, conn, core in zip("AB", pipes, cores, strict=True):
            conn.send(("round", calls, core))
            times, cpus = conn.recv()
            samples[name] += times
            rows.append((number, name, cpus, round(statistics.median(times), 2)))
    for conn in pipes:
        conn.send(None)
    for proc in procs:
        proc.join()
    os.sched_setaffinity(0, set(everything))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    spread = {
        name: round(max(r[3] for r in rows if r[1] == name) / min(r[3] for r in rows if r[1] == name), 3)
        for name in "AB"
    }
    return {"speedup": round(medians["B"] / medians["A"], 4), "round_spread": spread, "rounds": rows}


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernelbench", type=Path)
    parser.add_argument("--problems", default="3/37,3/41,3/38")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--calls", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", default="free,pinned,pinned_apart")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    logger.info(
        "cpus %s, siblings of the last: %s",
        sorted(os.sched_getaffinity(0)),
        sorted(siblings(max(os.sched_getaffinity(0)))),
    )
    report = {}
    for problem in args.problems.split(","):
        level, number = problem.split("/")
        path = next((args.kernelbench / "KernelBench" / f"level{level}").glob(f"{number}_*.py"))
        for mode in args.modes.split(","):
            for repeat in range(args.repeats):
                result = run_mode(str(path), mode, args.rounds, args.calls)
                report[f"{problem} {mode} {repeat}"] = result
                logger.info(
                    "%s %s #%d: speedup %.4f, round spread %s",
                    problem,
                    mode,
                    repeat,
                    result["speedup"],
                    result["round_spread"],
                )
                logger.info("   %s", " ".join(f"{r[1]}{r[2]}:{r[3]}" for r in result["rounds"]))
            if args.json:
                args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
