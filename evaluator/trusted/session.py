"""One task's reference process for a batch: what the problem needs, its baselines, its expected outputs.

The session starts the reference process, learns the problem's sizes (and whether it fits this device at
all), times the eager baseline alone (calibration, before any candidate runs and after each one is killed),
builds the torch.compile baseline once, and answers for every kernel of the task: expected outputs trial by
trial, comparisons of relayed outputs, and baseline rounds interleaved with the candidate's.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.sandbox.limits import GiB
from evaluator.trusted import slots as slot_files
from evaluator.trusted.conversation import Conversation, Stop
from evaluator.trusted.settings import STARTUP_TIMEOUT, Settings, reference_child

logger = logging.getLogger(__name__)

DESCRIBE_SEED = 5_000_011
CALIBRATION_SEED_BASE = 6_000_000
CONTEXT_BYTES = {"cuda": 1 * GiB, "cpu": GiB // 2}  # per process: a CUDA context and the flush buffer, or
# the interpreter and torch, and the slots, roughly


@dataclass
class Problem:
    """What the reference process measured of the task."""

    input_bytes: int
    output_bytes: int
    shape: list[int]
    dtype: str
    stochastic: bool
    parameter_bytes: int
    forward_ms: float  # one eager call on the host clock, when the task was sized
    scratch_bytes: int = 0  # the reference forward's own intermediates at their peak (GPU only)
    one_pass: bool = False  # the reference takes fingerprints with the one-pass kernel: the candidate too

    @property
    def numel(self) -> int:
        count = 1
        for size in self.shape:
            count *= size
        return count

    def process_bytes(self, device: str) -> int:
        """Memory one process (reference or candidate) needs for one trial's tensors and its forward."""
        return (
            self.input_bytes
            + self.output_bytes
            + self.parameter_bytes
            + self.scratch_bytes
            + CONTEXT_BYTES[device]
        )


@dataclass
class Calibration:
    """The eager baseline timed with no candidate on the device: samples (ms) and the loop's overhead."""

    samples: list[float] = field(default_factory=list)
    overhead_ms: float = 0.0

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


class TaskSession:
    """The reference process of one task; open() it, use it for each kernel, close() it."""

    def __init__(self, task_path: Path, settings: Settings):
        self.task_path = task_path
        self.settings = settings
        self.problem: Problem | None = None
        self.unfit: Stop | None = None
        self.failure: Stop | None = None
        self.calibration = Calibration()
        self.compiled = False
        self.compile_seconds = 0.0
        self.streams: int | None = None
        self.ready: dict[str, Any] = {}
        self.opened = False
        self.closed = False

    # Life ------------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Launch the reference process (it loads the task and builds its Model on its own)."""
        self.harness_end, child_end = slot_files.descriptor_pair()
        self.child = reference_child(self.settings, child_end.fileno())
        self.child.label = self.task_path.name
        self.child.__enter__()
        self.child.spec["task_path"] = self.child.add_file(self.task_path, "task.py")
        self.child.start()
        child_end.close()
        self.talk = Conversation(self.child, "reference")

    def open(self) -> TaskSession:
        """Ready, sized and calibrated; a failure is kept (every kernel of the task then gets it).

        A session sized ahead (evaluator.trusted.warmup) is only calibrated here.
        """
        self.opened = True
        try:
            if not hasattr(self, "child"):
                self.start()
            if self.problem is None:
                self.ready = self.talk.expect("ready", STARTUP_TIMEOUT, "startup")
                self.describe()
            if self.unfit is None and self.settings.policy.timing.calibration_calls:
                self.calibrate()
        except Stop as stop:
            self.failure = stop
            logger.warning("task %s: %s", self.task_path, stop.message)
        return self

    def close(self) -> None:
        self.closed = True
        if hasattr(self, "child"):
            self.child.send({"cmd": "stop"})
            self.child.__exit__(None, None, None)
            self.harness_end.close()

    def describe(self) -> None:
        reply = self.talk.request(
            {"cmd": "describe", "seed": DESCRIBE_SEED, "one_pass_bytes": self.settings.one_pass_bytes},
            "described",
            self.timeout(),
            "sizing",
        )
        self.problem = Problem(
            input_bytes=int(reply["input_bytes"]),
            output_bytes=int(reply["output_bytes"]),
            shape=[int(size) for size in reply["shape"]],
            dtype=str(reply["dtype"]),
            stochastic=bool(reply["stochastic"]),
            parameter_bytes=int(reply.get("parameter_bytes", 0)),
            forward_ms=float(reply.get("forward_ms") or 0.0),
            scratch_bytes=int(reply.get("scratch_bytes", 0)),
            one_pass=bool(reply.get("one_pass", False)),
        )
        needed, available, where = self.memory_need()
        if available and needed > available:
            self.unfit = Stop("resource_limit", self.unfit_message(needed, available, where))

    def memory_need(self) -> tuple[int, int | None, str]:
        """(bytes needed, bytes available, of what): the GPU holds both processes; on the CPU each child
        has its own host memory limit."""
        device = self.settings.policy.device
        if device == "cuda":
            gpu = self.settings.environment.get("gpu") or {}
            return 2 * self.problem.process_bytes(device), gpu.get("memory_bytes"), "the GPU's memory"
        return (
            self.problem.process_bytes(device),
            self.settings.limits().memory_bytes,
            "each child's memory limit",
        )

    def unfit_message(self, needed: int, available: int, where: str) -> str:
        problem = self.problem
        return (
            f"this problem needs about {needed / GiB:.1f} GiB ({problem.input_bytes} bytes of inputs, "
            f"{problem.output_bytes} of output, {problem.parameter_bytes} of weights and "
            f"{problem.scratch_bytes} of the forward's intermediates per process, the reference's and the "
            f"kernel's, with their runtime); {where} is {available / GiB:.1f} GiB"
        )

    def timeout(self) -> float:
        return self.settings.run_timeout

    # Baselines ------------------------------------------------------------------------------------------

    def calibrate(self) -> Calibration:
        """Time eager alone (no candidate on the device): what the interleaved times are checked against."""
        count = self.settings.policy.timing.calibration_calls
        seeds = [CALIBRATION_SEED_BASE + index for index in range(count)]
        message = {
            "cmd": "round",
            "variants": ["eager"],
            "seeds": seeds,
            "fingerprint_seed": 1,
            "warmup_seeds": seeds[:2],
        }
        reply, times = self.timed_round(message, "calibration")
        loop_ms = times.loop_ms
        samples = [record[1] for record in reply["records"]["eager"]]
        overhead = max(0.0, (loop_ms - sum(samples)) / max(1, len(samples)))
        self.calibration = Calibration(samples, overhead)
        return self.calibration

    def eager_ms(self) -> float | None:
        """The eager time limits are scaled to: calibrated where it was, else the sizing call's."""
        return self.calibration.median or (self.problem.forward_ms if self.problem else None)

    def reference_streams(self) -> int:
        """The CUDA streams the task's own forward uses (profiled once, when a candidate used several)."""
        if self.streams is None:
            message = {"cmd": "streams", "seed": DESCRIBE_SEED}
            reply = self.talk.request(message, "streams", self.timeout(), "profiling the reference")
            self.streams = int(reply["streams"])
        return self.streams

    def ensure_compiled(self) -> None:
        if self.compiled or "compile" not in self.settings.policy.baselines:
            return
        reply = self.talk.request(
            {"cmd": "compile", "seed": DESCRIBE_SEED},
            "compiled",
            self.settings.compile_timeout,
            "compiling the baseline",
        )
        self.compiled, self.compile_seconds = True, float(reply["seconds"])

    def timed_round(
        self, message: dict[str, Any], stage: str, seeds: SeedsToServe | None = None
    ) -> tuple[dict[str, Any], HostLoop]:
        """Send a round; (its reply, its loop on our clock), serving its seeds where given."""
        self.child.send(message)
        times = host_timed_loop(self.talk, self.timeout(), stage, seeds=seeds)
        return self.talk.expect("round", self.timeout(), stage), times

    # Trials ---------------------------------------------------------------------------------------------

    def attach(self, slots: slot_files.SlotFile) -> None:
        """Hand the reference the current kernel's memory file of output slots."""
        self.slot_bytes, self.slot_count = slots.slot_bytes, slots.count
        self.child.send({"cmd": "slots", **slots.describe()})
        slot_files.send_file(self.harness_end, slots)
        self.talk.expect("slots", self.timeout(), "sharing the output slots")

    def memory(self) -> dict[str, Any]:
        return self.talk.request({"cmd": "memory"}, "memory", self.timeout(), "reading the peak memory")


@dataclass
class SeedsToServe:
    """A hardened round's seeds, given to a child one at a time, each when its call asks: the warm-up calls'
    before the loop starts, the timed calls' inside it, then for each timed call `go` (our clock starts on
    it) and, once the call has returned, its fingerprint seed (our clock stops on the asking)."""

    warm: Sequence[int] = ()
    timed: Sequence[int] = ()
    printed: Sequence[int] = ()


@dataclass
class HostLoop:
    """A timed loop on our clock: from its start to its end, and (hardened) each timed call from `go` to
    the asking of its fingerprint seed: the call itself, the device's sync and one pipe's round trip."""

    loop_ms: float
    call_ms: list[float] = field(default_factory=list)
    asked_ms: list[float] = field(default_factory=list)  # each fingerprint seed's asking, from the start


@dataclass
class Serving:
    """Where a round stands in serving its seeds: what is left of each list, and the last `go` given."""

    seeds: SeedsToServe
    pending: list[int]
    printed: list[int]
    called: int = 0
    gone: int = 0
    go_at: float = 0.0
    started: float = 0.0
    last_call: Callable[[], None] | None = None  # called as the last call's fingerprint seed is asked

    def answer(self, event: Any, inside: bool, times: HostLoop) -> dict[str, Any] | None:
        """The reply to a request in the loop's order, or None for one out of it."""
        served = len(self.seeds.printed) - len(self.printed)
        if event == "next_seed" and self.pending and not (inside and self.called > served):
            self.called += inside  # inside the loop, a call's seed only once the one before it is over
            return {"cmd": "seed", "seed": self.pending.pop(0)}
        if event == "go" and inside and self.gone == served < self.called:
            self.gone, self.go_at = self.gone + 1, time.perf_counter()
            return {"cmd": "go"}
        if event == "print_seed" and inside and self.printed and served < self.gone:
            now = time.perf_counter()
            times.call_ms.append((now - self.go_at) * 1e3)
            times.asked_ms.append((now - self.started) * 1e3)
            seed = self.printed.pop(0)
            if not self.printed and self.last_call is not None:  # the child waits on us: still pinned
                self.last_call()
            return {"cmd": "print_seed", "seed": seed}
        return None


def host_timed_loop(
    talk: Conversation,
    timeout: float,
    stage: str,
    at_phase: Callable[[str], None] | None = None,
    seeds: SeedsToServe | None = None,
    at_last_call: Callable[[], None] | None = None,
) -> HostLoop:
    """A child's timed loop on our clock, between its announcements of the loop's start and end;
    `at_phase(phase)` is called at each, outside the span measured. Seeds given (hardened rounds) are served
    as SeedsToServe says: no call's seed is in that process before its turn, and no call's fingerprint seed
    before the call is over."""
    serving = Serving(seeds or SeedsToServe(), list((seeds or SeedsToServe()).warm), [])
    serving.last_call = at_last_call
    times, inside, started = HostLoop(0.0), False, 0.0
    kind = "harness_error" if talk.who == "reference" else "sandbox_violation"
    while True:
        message = talk.receive(timeout, stage)
        event, phase = message.get("event"), message.get("phase")
        reply = serving.answer(event, inside, times)
        if reply is not None:
            talk.child.send(reply)
            continue
        if event != "timing_loop":
            raise Stop(kind, f"unexpected message {event!r} from the {talk.who} during {stage}")
        if phase != ("end" if inside else "start") or serving.pending or (inside and serving.printed):
            raise Stop(kind, f"timed loop announced out of order ({phase!r})")
        if inside:
            times.loop_ms = (time.perf_counter() - started) * 1e3
            if at_phase is not None:
                at_phase(phase)
            return times
        if at_phase is not None:
            at_phase(phase)
        started, inside = time.perf_counter(), True
        serving.started = started
        serving.pending, serving.printed = list(serving.seeds.timed), list(serving.seeds.printed)
