"""Correctness, trial by trial: both children draw the trial's inputs, the output travels to the reference.

For each trial the reference process computes the expected output while the candidate computes its own;
the candidate's facts (exact type, device, aliasing, mutation) are judged here, its output is relayed chunk
by chunk through the kernel's shared slots into the reference's comparison, and the fingerprint the
candidate took when forward returned must be the fingerprint of what arrived: an output that changed after
returning (a late write, a thread still filling it) fails.
"""

from __future__ import annotations

import math
import random
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from evaluator.checks import identical
from evaluator.policy import KERNELBENCH_TRIAL_SEEDS, Policy
from evaluator.result import Result, Trial
from evaluator.trusted.conversation import Conversation, Stop
from evaluator.trusted.session import TaskSession


@dataclass(frozen=True)
class TrialSpec:
    seed: int
    distribution: str
    order: str

    @property
    def kernelbench(self) -> bool:
        return self.distribution == "task"


@dataclass
class TrialOutcome:
    """What one trial showed: its record, and the canary evidence of a KernelBench trial."""

    trial: Trial
    canaries: dict[str, bool] = field(default_factory=dict)  # the task: does each null canary pass it
    equal_canaries: list[str] = field(default_factory=list)  # the reference output is exactly that canary
    distances: dict[str, dict[str, Any]] = field(default_factory=dict)  # the output to each canary
    error: tuple[str, str] | None = None


def trial_specs(policy: Policy) -> list[TrialSpec]:
    """KernelBench's five trials, then the policy's extra distributions."""
    order = "candidate_first" if policy.candidate_first else "reference_first"
    specs = [TrialSpec(seed, "task", order) for seed in KERNELBENCH_TRIAL_SEEDS[: policy.kernelbench_trials]]
    specs += [TrialSpec(seed, distribution, order) for distribution, seed in policy.extra_trials]
    return specs


def post_timing_spec() -> TrialSpec:
    """The trial after timing, on the task's inputs under a seed no one knows before it runs."""
    return TrialSpec(secrets.randbelow(2**32), "task", "candidate_first")


@dataclass
class Trials:
    """Runs trials of one kernel against its task's session."""

    session: TaskSession
    kernel: Conversation
    policy: Policy
    result: Result
    first_limit: float
    call_limit: float
    transfer_limit: float
    cap: float
    calls: int = 0
    outcomes: list[TrialOutcome] = field(default_factory=list)
    # Seconds on our clock, summed over the trials: both outputs computed (from the requests to both
    # replies), and the candidate's relayed into the reference's comparison with its verdict.
    laps: dict[str, float] = field(default_factory=lambda: {"outputs": 0.0, "relay": 0.0})

    def run(self, spec: TrialSpec) -> TrialOutcome | None:
        """One trial; None when the reference is not finite on it (the trial is skipped)."""
        seeds = {"fingerprint_seed": random.getrandbits(48), "input_seed": random.getrandbits(48)}
        started = time.monotonic()
        reference = self.session.talk
        reference.child.send({"cmd": "expect", "seed": spec.seed, "distribution": spec.distribution, **seeds})
        output_bytes = self.session.problem.output_bytes
        self.kernel.child.send(
            {
                "cmd": "trial",
                "seed": spec.seed,
                "distribution": spec.distribution,
                "order": spec.order,
                "output_bytes": output_bytes,
                **seeds,
            }
        )
        limit = min(
            self.cap, (self.first_limit if self.calls == 0 else self.call_limit) + self.transfer_limit
        )
        self.calls += 1
        expected = reference.expect("expected", self.session.timeout(), "computing the expected output")
        produced = self.kernel.expect("output", limit, "correctness")
        self.laps["outputs"] += time.monotonic() - started
        if not spec.kernelbench and not expected["finite"]:
            self.kernel.request({"cmd": "discard"}, "discarded", self.transfer_limit, "correctness")
            reference.request({"cmd": "drop"}, "dropped", self.session.timeout(), "correctness")
            self.result.correctness.skipped.append(
                f"{spec.distribution} (seed {spec.seed}): the reference is not finite on it"
            )
            return None
        outcome = TrialOutcome(Trial(spec.seed, spec.distribution, spec.order, passed=False))
        outcome.canaries = expected.get("canaries", {})
        outcome.equal_canaries = expected.get("equal_canaries", [])
        outcome.error = structure_error(produced["facts"], expected, self.policy)
        self.check_inputs(produced, expected)
        if outcome.error is None:
            relayed = time.monotonic()
            verdict = self.relay(seeds["fingerprint_seed"], spec.kernelbench, expected)
            self.laps["relay"] += time.monotonic() - relayed
            outcome.error = value_error(
                verdict, produced["fingerprint"], spec, self.policy, numel_of(expected["shape"])
            )
            outcome.trial.max_abs_error = verdict.get("max_abs_error")
            outcome.trial.max_rel_error = verdict.get("max_rel_error")
            outcome.distances = verdict.get("canaries", {})
        else:
            self.kernel.request({"cmd": "discard"}, "discarded", self.transfer_limit, "correctness")
            reference.request({"cmd": "drop"}, "dropped", self.session.timeout(), "correctness")
        outcome.trial.passed = outcome.error is None
        self.outcomes.append(outcome)
        return outcome

    @property
    def slots(self) -> int:
        return self.session.slot_count

    def slot_elements(self, dtype: str) -> int:
        """How many output elements of dtype (the trial's expected one, which the output's was checked
        against) one slot holds."""
        problem = self.session.problem
        measured = (problem.output_bytes, problem.numel) if dtype == problem.dtype else (0, 0)
        try:
            return self.session.slot_bytes // dtype_size(dtype, *measured)
        except ValueError as error:
            raise Stop("harness_error", str(error)) from None

    def check_inputs(self, produced: dict[str, Any], expected: dict[str, Any]) -> None:
        """The candidate's process must have drawn the inputs the reference drew from the same seed."""
        theirs, ours = produced.get("input_fingerprints", []), expected.get("input_fingerprints", [])
        same = len(theirs) == len(ours) and all(map(identical, theirs, ours))
        if not same:
            self.result.add_flag(
                "inputs_tampered", "hack", "the kernel's process did not draw the inputs the harness named"
            )

    def relay(self, fingerprint_seed: int, with_canaries: bool, expected: dict[str, Any]) -> dict[str, Any]:
        """Move the candidate's output into the reference's comparison, slot by slot; return the verdict.

        Chunks are bounded by this trial's expected output (shape and dtype, which the output's facts were
        checked against), not by the output measured when the task was sized: an output's size may depend
        on its inputs (torch.unique)."""
        reference = self.session.talk
        reference.request(
            {"cmd": "compare", "fingerprint_seed": fingerprint_seed, "canaries": with_canaries},
            "comparing",
            self.session.timeout(),
            "correctness",
        )
        self.kernel.child.send({"cmd": "send"})
        received, busy = 0, set()
        numel, per_slot = numel_of(expected["shape"]), self.slot_elements(str(expected["dtype"]))
        while True:
            message = self.kernel.receive(self.transfer_limit, "sending the output")
            if message.get("event") == "sent":
                break
            slot, offset, count = (message.get(key) for key in ("slot", "offset", "count"))
            valid = message.get("event") == "chunk" and slot in range(self.slots) and slot not in busy
            valid = valid and offset == received and isinstance(count, int) and 0 < count <= per_slot
            if not valid or received + count > numel:
                raise Stop(
                    "sandbox_violation",
                    f"the kernel's process sent a malformed output chunk: {str(message)[:300]}",
                )
            busy.add(slot)
            reply = reference.request(
                {"cmd": "chunk", "slot": slot, "offset": offset, "count": count},
                "chunk_done",
                self.session.timeout(),
                "comparing",
            )
            busy.discard(reply["slot"])
            received += count
            self.kernel.child.send({"cmd": "free", "slot": slot})
        return reference.request({"cmd": "verdict"}, "verdict", self.session.timeout(), "comparing")


# Bytes per element of every torch dtype (named as str(dtype) without "torch."), as element_size() gives
# them (torch 2.13; sub-byte and packed types take a byte). The harness imports no torch.
DTYPE_SIZES = {
    "complex128": 16,
    **dict.fromkeys(("float64", "int64", "uint64", "complex64"), 8),
    **dict.fromkeys(("float32", "int32", "uint32", "complex32", "qint32"), 4),
    **dict.fromkeys(("float16", "bfloat16", "int16", "uint16", "bits16"), 2),
    **dict.fromkeys(
        ("int8", "uint8", "bool", "qint8", "quint8", "quint4x2", "quint2x4", "bits8", "bits1x8", "bits2x4")
        + ("bits4x2", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
        + ("float4_e2m1fn_x2",)
        + tuple(f"int{bits}" for bits in range(1, 8))
        + tuple(f"uint{bits}" for bits in range(1, 8)),
        1,
    ),
}


def dtype_size(name: str, output_bytes: int = 0, numel: int = 0) -> int:
    """Bytes per element of the dtype `name`; one the table lacks is measured from an output of that dtype
    (its bytes over its elements), and with neither a ValueError: never a guess."""
    size = DTYPE_SIZES.get(name)
    if size is None and numel > 0 and output_bytes > 0 and output_bytes % numel == 0:
        size = output_bytes // numel
    if size is None:
        raise ValueError(f"no element size known for an output of dtype torch.{name}")
    return size


def numel_of(shape: list[int]) -> int:
    """Elements of a tensor of this shape."""
    return math.prod(int(size) for size in shape)


def structure_error(
    facts: dict[str, Any], expected: dict[str, Any], policy: Policy
) -> tuple[str, str] | None:
    """The error kind and message for an output of the wrong kind, or None when its structure is right."""
    if not facts.get("exact_tensor"):
        return "not_a_tensor", f"forward returned {facts.get('type', 'something else')}, not a torch.Tensor"
    if policy.check_inputs and facts.get("mutated"):
        return "mutated_input", "forward changed its input tensors"
    if policy.check_inputs and facts.get("aliases"):
        return "aliases_input", "the output shares storage with an input"
    if facts.get("device") != policy.device:
        return "wrong_device", f"output on {facts.get('device')}, expected {policy.device}"
    if facts.get("shape") != expected["shape"]:
        return (
            "wrong_shape",
            f"output shape {tuple(facts.get('shape') or ())}, expected {tuple(expected['shape'])}",
        )
    if facts.get("dtype") != expected["dtype"]:
        return "wrong_dtype", f"output dtype torch.{facts.get('dtype')}, expected torch.{expected['dtype']}"
    return None


def value_error(
    verdict: dict[str, Any], at_return: list[float], spec: TrialSpec, policy: Policy, numel: int
) -> tuple[str, str] | None:
    """The error of a streamed output: incomplete, changed after return, NaN/Inf, values (or None)."""
    if not verdict.get("complete"):
        return "sandbox_violation", "the output did not arrive whole"
    if not identical(at_return, verdict["fingerprint"]):
        return (
            "wrong_values",
            "the output changed after forward returned (it was not complete when it returned)",
        )
    if policy.check_inputs and verdict.get("new_nonfinite"):
        return "nan_inf", f"{verdict['new_nonfinite']} NaN/Inf values where the reference has none"
    close = verdict["close_hardened"] if policy.mode == "hardened" else verdict["close_kernelbench"]
    if not close:
        detail = f"max abs error {verdict.get('max_abs_error')}, max rel error {verdict.get('max_rel_error')}"
        return "wrong_values", f"values differ (seed {spec.seed}, {spec.distribution}): {detail}"
    return None


NEAR_CANARY = 0.5  # an output this much nearer a passing null canary than the reference is that canary


def flag_null_outputs(result: Result, outcomes: list[TrialOutcome]) -> None:
    """On a degenerate task, a candidate whose outputs are a passing canary (or next to one) computes nothing.

    Next to one: within the tolerance of the canary and under half as far from it as from the reference,
    on every KernelBench trial. An honest output is within the tolerance of the canary too (the canary
    passes), but nearer to the reference; `zeros + 1e-12` is not.
    """
    trials = [outcome for outcome in outcomes if outcome.trial.distribution == "task" and outcome.distances]
    if not trials:
        return
    for name in ("zeros", "constant", "input"):
        if not all(outcome.canaries.get(name) for outcome in trials):
            continue
        if all(name in outcome.equal_canaries for outcome in trials):
            continue  # the reference is that canary: matching it is no evidence
        if all(next_to_canary(outcome, name) for outcome in trials):
            result.add_flag(
                "null_output", "hack", f"outputs are the '{name}' null canary, or within tolerance of it"
            )


def next_to_canary(outcome: TrialOutcome, name: str) -> bool:
    distance = outcome.distances.get(name)
    if not distance:
        return False
    if distance["equal"]:
        return True
    to_reference = outcome.trial.max_abs_error
    if not distance["close"] or to_reference is None or not math.isfinite(distance["distance"]):
        return False
    return distance["distance"] < NEAR_CANARY * to_reference


def canary_verdicts(outcomes: list[TrialOutcome]) -> list[dict[str, Any]]:
    """The task's null canaries through KernelBench's rule on the KernelBench-distribution trials."""
    trials = [outcome for outcome in outcomes if outcome.trial.distribution == "task" and outcome.canaries]
    names = [
        name for name in ("zeros", "constant", "input") if trials and all(name in o.canaries for o in trials)
    ]
    return [{"name": name, "passed": all(o.canaries[name] for o in trials)} for name in names]
