"""Timing: the candidate's process and the reference process take turns, round by round, on the same GPU.

Hardened mode: every round names new seeds (so every call has new inputs, the same in both processes), a new
fingerprint seed and the order of the sides (alternating, and the baselines' order with it). Each side
reports its own samples; the harness times each side's loop on its own clock and reads, from /proc, the CPU
the kernel's processes use in its loops and while the baselines' rounds run. KernelBench mode: the
candidate's block of calls on one fixed input set, then each baseline's (KernelBench's order and warm-ups).
"""

from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from evaluator.policy import KERNELBENCH_SEED, Policy
from evaluator.trusted.conversation import Conversation, Stop
from evaluator.trusted.session import SeedsToServe, TaskSession, host_timed_loop


@dataclass
class SideRound:
    """One side's turn: its records per variant ([seed, ms, fingerprint, facts]), its loop on our clock."""

    side: str
    records: dict[str, list[list[Any]]]
    loop_ms: float
    seeds: list[int]
    integrity: dict[str, Any] = field(default_factory=dict)
    # The CPU the kernel's processes used (from /proc) over span_ms of our clock: its own timed loop on its
    # turn, the whole of the baselines' round on theirs (None where /proc cannot tell).
    kernel_cpu_ms: float | None = None
    span_ms: float = 0.0
    # Hardened: each timed call on our clock, from `go` to the asking of its fingerprint seed, in the order
    # of the records (the variants' one after another on the reference's side).
    call_ms: list[float] = field(default_factory=list)
    # Hardened: when each timed call's fingerprint seed was asked, from the loop's start (same order): from
    # one to the next, a call's whole cycle (its checks, the next inputs, anything else done in between).
    asked_ms: list[float] = field(default_factory=list)
    # On a timing core: how often the kernel's launching thread changed CPUs from the timed loop's start to
    # its last call (read from /proc by the harness; pinned, it moves only if the kernel moved it).
    migrations: int | None = None
    # The whole turn on our clock (its message sent to its reply read), and where its process says its
    # loops and checks spent their time (timing.Loop's phases, ms): a record only, judged on nothing.
    turn_ms: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)


@dataclass
class Timing:
    """Every round of one kernel's timing."""

    rounds: list[SideRound] = field(default_factory=list)

    def of(self, side: str) -> list[SideRound]:
        return [turn for turn in self.rounds if turn.side == side]

    def records(self, variant: str) -> list[list[Any]]:
        return [record for turn in self.rounds for record in turn.records.get(variant, [])]


@dataclass
class Rounds:
    """Runs the timing of one kernel."""

    session: TaskSession
    kernel: Conversation
    policy: Policy
    call_limit: float
    timing: Timing = field(default_factory=Timing)

    def run(self) -> Timing:
        if self.policy.timing.interleaved:
            self.interleaved()
        else:
            self.blocks()
        return self.timing

    def interleaved(self) -> None:
        """Rounds until every variant has its calls: the first sized by the eager time, the rest by the
        first round's time per call on our clock (policy.TimingPlan.calls_per_round)."""
        plan = self.policy.timing
        baselines = list(self.policy.baselines)
        trials, done, index = plan.trials, 0, 0
        size = plan.calls_per_round(self.session.eager_ms() if self.session is not None else None)
        while done < trials:
            calls = min(size, trials - done)
            message = {
                "seeds": fresh_seeds(calls),
                "print_seeds": fresh_seeds(calls),  # each call's fingerprint seed, told after the call
                "input_seed": random.getrandbits(48),
            }
            warm = fresh_seeds(plan.warmup if index == 0 else plan.round_warmup)
            variants = baselines if index % 2 == 0 else baselines[::-1]
            sides = ("candidate", "reference") if index % 2 == 0 else ("reference", "candidate")
            for side in sides:
                if side == "candidate":
                    self.candidate_round({**message, "warmup_seeds": warm})
                elif variants:
                    warmup = plan.baseline_warmup if index == 0 else plan.round_warmup
                    ref_warm = fresh_seeds(warmup)
                    self.reference_round({**message, "variants": variants, "warmup_seeds": ref_warm})
            if index == 0:
                trials = plan.trials_within_budget(self.slowest_median())
                size = plan.calls_per_round(self.slowest_call_ms())
            done += calls
            index += 1

    def slowest_median(self) -> float:
        """The largest median (ms) of any variant's calls so far."""
        variants = ["candidate", *self.policy.baselines]
        medians = [statistics.median(ms) for ms in map(self.milliseconds, variants) if ms]
        return max(medians, default=0.0)

    def slowest_call_ms(self) -> float:
        """The most milliseconds of our clock one timed call of either side took in the rounds so far (its
        loop over its calls): flush, inputs and checks included."""
        per_call = [turn.loop_ms / len(turn.seeds) for turn in self.timing.rounds if turn.seeds]
        return max(per_call, default=0.0)

    def milliseconds(self, variant: str) -> list[float]:
        """The times of the well-formed records so far (a malformed report is judged after the last round)."""
        return [record[1] for record in self.timing.records(variant) if well_formed(record)]

    def blocks(self) -> None:
        """KernelBench's order: the candidate's calls, then eager's, then torch.compile's."""
        plan = self.policy.timing
        calls = plan.trials + plan.discard_first
        fixed = {
            "fixed_seed": KERNELBENCH_SEED,
            "calls": calls,
            "fingerprint_seed": random.getrandbits(48),
            "input_seed": 0,
        }
        self.candidate_round({**fixed, "warmup_seeds": [KERNELBENCH_SEED] * plan.warmup})
        for variant in self.policy.baselines:
            warmup = plan.compile_warmup if variant == "compile" else plan.baseline_warmup
            self.reference_round(
                {**fixed, "variants": [variant], "warmup_seeds": [KERNELBENCH_SEED] * warmup}
            )

    def round_limit(self, message: dict[str, Any]) -> float:
        calls = len(message.get("seeds") or []) or message.get("calls", 0)
        return (calls + len(message.get("warmup_seeds", [])) + 2) * self.call_limit

    def candidate_round(self, message: dict[str, Any]) -> None:
        limit = self.round_limit(message)
        cpu: dict[str, float | None] = {}

        moves: dict[str, int | None] = {}

        def read_cpu(phase: str) -> None:
            cpu[phase] = self.kernel.child.cpu_ms()
            if phase == "start":
                moves["start"] = self.thread_migrations()

        def read_moves() -> None:
            moves["last"] = self.thread_migrations()

        sent, served = served_one_by_one(message, 1)
        sent_at = time.perf_counter()
        self.kernel.child.send({"cmd": "round", **sent})
        times = host_timed_loop(self.kernel, limit, "timing", read_cpu, served, read_moves)
        loop_ms = times.loop_ms
        reply = self.kernel.expect("round", limit, "timing")
        records = reply.get("records")
        if not isinstance(records, list):
            raise Stop("sandbox_violation", "malformed timing report from the sandbox: no records")
        seeds = requested_seeds(message)
        integrity = reply.get("integrity") or {}
        used = spent(cpu.get("start"), cpu.get("end"))
        turn = SideRound("candidate", {"candidate": records}, loop_ms, seeds, integrity, used, loop_ms)
        turn.call_ms, turn.asked_ms = times.call_ms, times.asked_ms
        turn.turn_ms, turn.phases = (time.perf_counter() - sent_at) * 1e3, reported_phases(reply)
        moved = spent(moves.get("start"), moves.get("last"))
        turn.migrations = None if moved is None else int(moved)
        self.timing.rounds.append(turn)

    def thread_migrations(self) -> int | None:
        """The kernel's thread's CPU changes so far, where its calls run on a timing core (else None)."""
        pinned = self.session is not None and self.session.settings.timing_cpu is not None
        return self.kernel.child.migrations() if pinned else None

    def reference_round(self, message: dict[str, Any]) -> None:
        if "compile" in message["variants"]:
            self.session.ensure_compiled()
        before, started = self.kernel.child.cpu_ms(), time.perf_counter()
        sent, served = served_one_by_one(message, len(message["variants"]))
        reply, times = self.session.timed_round({"cmd": "round", **sent}, "timing the baselines", served)
        span_ms = (time.perf_counter() - started) * 1e3
        used = spent(before, self.kernel.child.cpu_ms())
        seeds = requested_seeds(message)
        turn = SideRound("reference", reply["records"], times.loop_ms, seeds, {}, used, span_ms)
        turn.call_ms, turn.asked_ms = times.call_ms, times.asked_ms
        turn.turn_ms, turn.phases = span_ms, reported_phases(reply)
        self.timing.rounds.append(turn)


def served_one_by_one(message: dict[str, Any], variants: int) -> tuple[dict[str, Any], SeedsToServe | None]:
    """A hardened round's message with its seeds taken out (the child is told how many calls, and asks for
    each seed in turn), and what to serve: every list once per variant, as the child's loops run them. A
    round on one fixed input set (KernelBench mode) is sent as it is."""
    if "seeds" not in message:
        return message, None
    lists = ("seeds", "warmup_seeds", "print_seeds")
    sent = {key: value for key, value in message.items() if key not in lists}
    sent.update(calls=len(message["seeds"]), warmup_calls=len(message["warmup_seeds"]))
    served = SeedsToServe(
        list(message["warmup_seeds"]) * variants,
        list(message["seeds"]) * variants,
        list(message["print_seeds"]) * variants,
    )
    return sent, served


PHASES = frozenset(
    {
        "inputs",
        "before",
        "go",
        "call",
        "fingerprint",
        "observe",
        "collect",
        "warmup",
        "check",
        "freeze",
        "records",
    }
)


def reported_phases(reply: dict[str, Any]) -> dict[str, float]:
    """A round's phases as its process reported them: known names, finite non-negative milliseconds."""
    phases = reply.get("phases_ms")
    if not isinstance(phases, dict):
        return {}
    return {
        name: float(ms)
        for name, ms in phases.items()
        if name in PHASES and isinstance(ms, int | float) and math.isfinite(ms) and ms >= 0
    }


def fresh_seeds(count: int) -> list[int]:
    """Seeds drawn one by one: knowing one call's seed says nothing of another's."""
    return [random.getrandbits(62) for _ in range(count)]


def spent(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else max(0.0, after - before)


def well_formed(record: Any) -> bool:
    """[seed, ms, fingerprint, facts]: a finite, non-negative time, a list of numbers, a dict."""
    if not isinstance(record, list) or len(record) != 4:
        return False
    _seed, ms, fingerprint, facts = record
    numbers = isinstance(ms, int | float) and math.isfinite(ms) and ms >= 0
    return numbers and a_fingerprint(fingerprint) and isinstance(facts, dict)


def a_fingerprint(value: Any) -> bool:
    """A fingerprint as a side reports it: a list of numbers."""
    return isinstance(value, list) and all(isinstance(v, int | float) for v in value)


def requested_seeds(message: dict[str, Any]) -> list[int]:
    if message.get("fixed_seed") is not None:
        return [message["fixed_seed"]] * message["calls"]
    return list(message["seeds"])
