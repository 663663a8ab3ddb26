"""Evaluate one kernel against its task's session: drive the candidate's child stage by stage, judge here.

Stages: import (and construct), correctness trials (each output relayed to the reference process and
compared there), timing rounds interleaved with the reference's baselines, a post-timing trial, the
deferred-work probe and the profile. Every limit is scaled to the task's calibrated eager time. The child is
killed at the end, whatever happened; the reference process lives on for the task's next kernel.
"""

from __future__ import annotations

import logging
import math
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.checks import matches
from evaluator.clock import StageClock
from evaluator.policy import Policy
from evaluator.result import Correctness, Result
from evaluator.sandbox.process import ChildProcess
from evaluator.sources import kernel_identity, task_identity
from evaluator.trusted import flags
from evaluator.trusted.conversation import Conversation, Stop
from evaluator.trusted.correctness import (
    Trials,
    canary_verdicts,
    flag_null_outputs,
    post_timing_spec,
    trial_specs,
)
from evaluator.trusted.rounds import Rounds
from evaluator.trusted.session import Calibration, TaskSession
from evaluator.trusted.settings import STARTUP_TIMEOUT, Settings, candidate_child
from evaluator.trusted.slots import SlotFile
from evaluator.trusted.speed import apply_consistency, judge_timing

logger = logging.getLogger(__name__)

PROBE_SEED = 7_000_003
BOOT_WAIT_S = 30.0  # the most one kernel's timing waits for the processes started ahead of their turn to boot


@dataclass
class Launch:
    """A candidate's child, started (possibly ahead of its turn), with its own memory file of slots."""

    kernel_path: Path
    task_path: Path
    source: str
    settings: Settings

    def __post_init__(self):
        self.identity = kernel_identity(self.kernel_path, self.source)
        self.slots = SlotFile.create(self.settings.slot_bytes)
        self.child = candidate_child(
            self.settings, "candidate", self.identity["sha256"], self.slots, self.source
        )
        self.child.label = self.kernel_path.name
        self.talk = Conversation(self.child, "kernel")
        self.started = False

    def start(self, ahead: bool = False) -> Launch:
        """Enter the sandbox and start the interpreter; it loads the task and waits for 'import'. Started
        ahead of its turn, it also takes its integrity snapshot as it boots (off the kernel's own time)."""
        if not self.started:
            self.child.spec["snapshot_at_boot"] = ahead
            self.child.__enter__()
            self.child.spec["task_path"] = self.child.add_file(self.task_path, "task.py")
            self.child.spec["kernel_path"] = self.child.add_file(self.kernel_path, "kernel.py")
            self.child.start()
            self.started = True
        return self

    def close(self) -> None:
        if self.started:
            self.child.__exit__(None, None, None)
        self.slots.close()


def new_result(task_path: Path, identity: dict[str, Any], settings: Settings) -> Result:
    policy = settings.policy
    result = Result(
        mode=policy.mode,
        device=policy.device,
        task=task_identity(task_path, task_path.read_text(encoding="utf-8")),
        kernel=identity,
        speedup_statistic=policy.speedup_statistic,
        environment=settings.environment,
    )
    result.correctness = Correctness(policy.tolerance, policy.tolerance)
    return result


def wait_booted(children: list[ChildProcess], limit_s: float = BOOT_WAIT_S) -> None:
    """Until the processes started ahead of their turn have booted (each has said 'ready', left unread), at
    most limit_s in all: an interpreter importing torch beside a timed kernel is load on the host that the
    kernel's rounds would carry, and launch-bound kernels feel it. Not where the calls run on a timing core
    (evaluator.trusted.cores): a boot is CPU work alone (imports; CUDA starts at the kernel's turn), never
    on that core. The wait took 2.5-5.9 s a level-3 kernel on an H100."""
    deadline = time.monotonic() + limit_s
    for child in children:
        if not child.message_waiting(max(0.0, deadline - time.monotonic())):
            logger.info("%s did not boot within %.0f s; timing goes on", child.label, limit_s)
            return


def evaluate_kernel(
    session: TaskSession, launch: Launch, settings: Settings, ahead: list[ChildProcess] | None = None
) -> Result:
    """The whole verdict for one kernel. Never raises for the kernel's faults; they end up in the result.

    `ahead`: the children started for the next kernel, whose boot the timing waits out (wait_booted)."""
    started = time.monotonic()
    result = new_result(launch.task_path, launch.identity, settings)
    flags.apply_static_flags(result, launch.source)
    try:
        if result.kernel["backend"] == "cuda" and settings.policy.device == "cpu":
            raise Stop("needs_gpu", "a CUDA (load_inline) kernel needs a CUDA GPU; this run is on the CPU")
        for stop in (session.failure, session.unfit):
            if stop is not None:
                raise stop
        Evaluation(session, launch, settings, result, ahead or []).run()
    except Stop as stop:
        result.fail(stop.kind, stop.message)
    except Exception:  # noqa: BLE001 - our own failure: recorded as such, the batch goes on
        logger.exception("harness error while evaluating %s", launch.kernel_path)
        result.fail("harness_error", traceback.format_exc()[-6000:])
    finally:
        result.log = launch.child.log() if launch.started else ""
        launch.close()
        if launch.started:
            result.resources["kernel_temp_dir"] = launch.child.temp_usage
        recover(session, result)
    result.durations_s["total"] = time.monotonic() - started
    if not result.correct:
        result.speedup = {"eager": None, "compile": None}
    return result


def recover(session: TaskSession, result: Result) -> None:
    """After a kernel: the reference drops what it held for it (a dead reference fails the task's rest)."""
    if session.failure is not None or session.unfit is not None:
        return
    if not session.child.alive():
        session.failure = Stop("harness_error", "the reference process of this task ended")
        return
    try:
        session.talk.request({"cmd": "drop"}, "dropped", session.timeout(), "clean-up")
    except Stop as stop:
        session.failure = stop


IMPORT_STAGES = ("setup", "one_pass", "snapshot", "module", "model", "buffers", "check")


def import_stages(imported: dict[str, Any]) -> dict[str, float]:
    """durations_s.import_<stage>, as the kernel's process reports them (informative only: it could lie)."""
    stages = imported.get("stages")
    stages = stages if isinstance(stages, dict) else {}
    reported = {}
    for name in IMPORT_STAGES:
        value = stages.get(name)
        if isinstance(value, int | float) and math.isfinite(value) and value >= 0:
            reported[f"import_{name}"] = round(float(value), 4)
    return reported


def import_around(imported: dict[str, Any], sent: float, received: float) -> dict[str, float]:
    """durations_s.import_wait (the request sent to the kernel's process starting on it) and import_reply
    (its last stage to the reply read here), from the span the process reports on the host's monotonic
    clock; dropped unless it lies inside the harness's own span (informative only, as import_stages)."""
    span = imported.get("span")
    if not (isinstance(span, list) and len(span) == 2 and all(isinstance(t, int | float) for t in span)):
        return {}
    opened, closed = span
    if not sent <= opened <= closed <= received:
        return {}
    return {"import_wait": round(opened - sent, 4), "import_reply": round(received - closed, 4)}


def without_event(message: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in message.items() if key != "event"}


@dataclass
class Evaluation:
    session: TaskSession
    launch: Launch
    settings: Settings
    result: Result
    ahead: list[ChildProcess]

    @property
    def policy(self) -> Policy:
        return self.settings.policy

    def run(self) -> None:
        kernel = self.launch.start().talk
        problem = self.session.problem
        self.result.resources = {
            "input_bytes": problem.input_bytes,
            "output_bytes": problem.output_bytes,
            "parameter_bytes": problem.parameter_bytes,
            "scratch_bytes": problem.scratch_bytes,
        }
        self.limits()
        kernel.expect("ready", STARTUP_TIMEOUT, "startup")
        stage = time.monotonic()
        imported = kernel.request(
            {"cmd": "import", "one_pass": problem.one_pass},  # the path the reference took
            "imported",
            self.settings.compile_timeout,
            "import and compile",
        )
        self.result.compiled = True
        received = time.monotonic()
        self.result.durations_s["compile"] = received - stage
        self.result.durations_s.update(import_stages(imported))
        self.result.durations_s.update(import_around(imported, stage, received))
        flags.apply_integrity_flags(self.result, imported.get("integrity", {}))
        self.session.attach(self.launch.slots)
        trials = self.correctness(kernel)
        if not self.result.correct:
            return
        self.timing(kernel, trials)

    def limits(self) -> None:
        budget, cap = self.policy.budget, self.settings.run_timeout
        eager = self.session.eager_ms()
        problem = self.session.problem
        self.result.limits = {
            "first_call_s": budget.first_limit(eager, cap),
            "call_s": budget.call_limit(eager, cap),
            "transfer_s": budget.transfer_limit(problem.input_bytes + problem.output_bytes, cap),
        }

    def trials(self, kernel: Conversation) -> Trials:
        limits = self.result.limits
        first, call, transfer = limits["first_call_s"], limits["call_s"], limits["transfer_s"]
        return Trials(
            self.session, kernel, self.policy, self.result, first, call, transfer, self.settings.run_timeout
        )

    def correctness(self, kernel: Conversation) -> Trials:
        stage = time.monotonic()
        trials = self.trials(kernel)
        for spec in trial_specs(self.policy):
            outcome = trials.run(spec)
            if outcome is None:
                continue
            self.result.correctness.trials.append(outcome.trial)
            if outcome.error:
                self.result.fail(*outcome.error)
                break
        self.result.canaries = canary_verdicts(trials.outcomes)
        self.result.degenerate = any(canary["passed"] for canary in self.result.canaries)
        if self.result.degenerate:
            passed = ", ".join(c["name"] for c in self.result.canaries if c["passed"])
            self.result.add_flag(
                "degenerate_task", "info", f"null canaries pass this task under KernelBench rules: {passed}"
            )
        check = kernel.request({"cmd": "check"}, "integrity", self.settings.run_timeout, "correctness")
        flags.apply_integrity_flags(self.result, check.get("integrity", {}))
        self.result.durations_s["correctness"] = time.monotonic() - stage
        laps = {f"correctness_{name}": round(seconds, 4) for name, seconds in trials.laps.items()}
        self.result.durations_s.update(laps)
        if self.result.error is None:
            self.result.correct = True
            flag_null_outputs(self.result, trials.outcomes)
        return trials

    def timing(self, kernel: Conversation, trials: Trials) -> None:
        clock = StageClock()
        if self.settings.timing_cpu is None:  # on a timing core, booting processes are kept off its core
            wait_booted(self.ahead)
        clock.lap("settle")
        before = self.session.calibration
        timing = Rounds(self.session, kernel, self.policy, self.result.limits["call_s"]).run()
        clock.lap("rounds")
        problem = self.session.problem
        judge_timing(
            self.result, timing, self.policy, problem.numel, problem.stochastic, self.settings.run_timeout
        )
        if self.result.timing is not None:
            self.result.timing.cpu = self.settings.timing_cpu
        if self.policy.post_timing_check:
            outcome = trials.run(post_timing_spec())
            if outcome is not None:
                self.result.correctness.trials.append(outcome.trial)
                if outcome.error:
                    self.result.fail(*outcome.error)
        clock.lap("post_check")
        self.probe(kernel, problem)
        memory = kernel.request({"cmd": "memory"}, "memory", self.settings.run_timeout, "timing")
        self.result.resources["peak"] = {"kernel": without_event(memory)}
        self.launch.child.kill()
        clock.lap("probe")
        after = self.session.calibrate() if self.policy.timing.calibration_calls else Calibration()
        apply_consistency(self.result, timing, self.policy, before, after)
        self.result.resources["peak"]["reference"] = without_event(self.session.memory())
        clock.lap("calibration")
        self.result.durations_s["timing"] = sum(clock.laps.values())
        self.result.durations_s.update({f"timing_{name}": round(s, 4) for name, s in clock.laps.items()})
        self.result.correct = self.result.error is None

    def probe(self, kernel: Conversation, problem) -> None:
        message = {
            "cmd": "probe",
            "seed": PROBE_SEED,
            "fingerprint_seed": PROBE_SEED,
            "output_bytes": problem.output_bytes,
        }
        probe = kernel.request(
            message, "probe", self.result.limits["call_s"] * 4 + 60, "the deferred-work probe"
        )
        report: dict[str, Any] = {}
        at_return, after_sync = probe.get("deferred_probe") or ([], [])
        if (
            at_return
            and not problem.stochastic
            and not matches(at_return, after_sync, problem.numel, self.policy.tolerance)
        ):
            report["deferred_work"] = (
                "the output was incomplete when forward returned and complete after a sync"
            )
        if probe.get("kernels") is not None:
            report["kernels"] = probe["kernels"]
            report["streams"] = probe["kernels"].get("streams", 1)
            if report["streams"] > 1:  # judged against the task's own forward (cuDNN may add streams)
                report["reference_streams"] = self.session.reference_streams()
        flags.apply_integrity_flags(self.result, probe.get("integrity", {}))
        flags.apply_timing_flags(self.result, report, problem.input_bytes + problem.output_bytes)
