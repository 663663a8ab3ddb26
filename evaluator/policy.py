"""What each mode checks and how it times: the numbers that make hardened and KernelBench modes differ."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from evaluator.stats import ROUND_PAIRS

MODES = ("hardened", "kernelbench")
DEVICES = ("cpu", "cuda")
BASELINES = ("eager", "compile")

# KernelBench: fp32 1e-4 since PR #80; v0 and v0.1 used 1e-2 (for fp16/bf16 it is still 1e-2).
TOLERANCES = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2, "v0.1": 1e-2}
KERNELBENCH_SEED = 42
KERNELBENCH_TRIALS = 5
# KernelBench's correctness seeds: torch.manual_seed(42), then randint(0, 2**32 - 1) per trial (the child's
# inputs.kernelbench_trial_seeds computes them; a test pins that they agree).
KERNELBENCH_TRIAL_SEEDS = (734796314, 576165995, 2197670066, 839703249, 2584932063)

# Hardened extra trials: (distribution, seed). Seeds are fixed so verdicts are reproducible. The trial after
# timing draws its seed afresh for every kernel (correctness.post_timing_spec, recorded in the result): public
# seeds let a kernel recognise every other trial's inputs and be exact only there.
EXTRA_TRIALS = (("signed", 1_000_003), ("signed", 1_000_033), ("heavy_tailed", 2_000_003))
STOCHASTIC_SEEDS = (1, 2)  # the reference run twice on one input set under these RNG seeds
TASK_MODULE = "kb_task"  # the task module's name in the sandbox (and the prefix of its watched names)

# Cross-checks of what the candidate's process claims against the harness's own clock (trusted.flags):
# claimed samples may exceed the host-timed round by this (scale, ms), the harness's wake-up latency:
CLAIMS_SLACK = {"cuda": (1.02, 5.0), "cpu": (1.10, 50.0)}
HIDDEN_FRACTION, HIDDEN_MIN_MS = 0.5, 25.0  # GPU: round time no claim explains, beyond the loop's overhead
# The eager baseline timed interleaved with the candidate against its timing with no candidate on the GPU
# (before the candidate started and after it was killed): (suspect ratio, hack ratio, absolute slack ms).
BASELINE_SLOWED = (1.25, 1.6, 0.005)
# The CPU the kernel's processes may use, read from /proc by the harness: in its timed loops at most this many
# cores (it is given one thread; more means threads or processes working beside the timed calls), and while
# the baselines are timed at most this share of their rounds (it has nothing to do then); beyond a slack of
# some clock ticks per round (/proc counts CPU in ticks of 10 ms). On an H100 (harness 2.9.0, ninth session)
# honest kernels' loops used 0.93-1.01 cores (16 results: the GPU corpus's honest rows and six KernelBench
# identity candidates), a kernel helped by a forked process 1.71: the GPU's figure leaves room for CUDA's
# own threads.
KERNEL_LOOP_CORES = {"cpu": 1.02, "cuda": 1.2}
# Each hardened timed call on the harness's clock (from its `go` to the asking of its fingerprint seed) less
# the time its side claimed for it: the same on both sides for honest calls (the flush, the syncs, two pipe
# wake-ups), so on a GPU the candidate's median may exceed the baseline's by at most this (ms, share of its
# median claim) before its claims count as smaller than its calls took: (hack, suspect). On the CPU, where a
# shared host's scheduling moves one side's wake-ups by more (an honest kernel once exceeded by 1 ms: one
# round of 5 calls, other work beside it), the candidate's samples are raised by the excess instead, where
# it passes this margin (speed.samples): a kernel rewriting its records to 0.45x reads about as fast as it is.
# Honest kernels on an H100 (2026-12-07, harness 2.14.0, ~50 results on KernelBench level-2 problems and the
# corpus) read -0.105 to +0.122 ms; the same honest L2/6 kernel +0.051 in one batch and +0.122 in the next
# (a 0.89 ms call): the suspect floor sits above that spread. The forgers of the corpus read +1.6 to +20 ms.
UNCLAIMED_CALL = {"cuda": ((0.25, 0.03), (0.15, 0.02))}
# On a GPU the candidate's calls beyond their claims that many ms *below* the baselines' (a median): its
# process answered the harness's handshake itself (honest kernels on an H100: -0.055 to +0.009 ms).
ANSWERED_ITSELF_MS = 0.15
CPU_UNCLAIMED_MARGIN_MS = 0.05
KERNEL_IDLE_SHARE, KERNEL_CPU_SLACK_MS = 0.05, 20.0
# With a time budget, the timed calls per variant never fall below this many rounds (each side first once)
# of the device's default size, whatever size is chosen.
MIN_ROUNDS_IN_BUDGET = 2
# Hardened: calls per variant in one round before the sides alternate, unless one is given (the most a round
# holds where rounds are sized by time).
ROUND_CALLS = {"cuda": 20, "cpu": 5}
# Hardened on a GPU: each round holds as many calls as fill about this much of the harness's clock per side
# (at the slowest variant's time per call), at least ROUND_MIN_CALLS. On an H100 (docs/gpu-validation.md,
# seventh session) launch- and latency-bound models ran up to 1.8x slow for spells of 0.5-2 s; rounds of 20
# calls of 60 ms let one spell fall on one side only (identity speedups 0.77-1.05), short rounds share it.
ROUND_MS = {"cuda": 250.0, "cpu": 0.0}
ROUND_MIN_CALLS = 4
# Hardened on a GPU: untimed calls at the start of every round after the first (the first has the warm-up).
# In the same run a round's first call ran up to 1.37x the rest of its round on the candidate's side of
# launch-bound models (1.03-1.23x on the baseline's): with rounds of 4 calls that would weigh on one side.
ROUND_WARMUP = {"cuda": 1, "cpu": 0}
# Hardened timing's budget per variant on a GPU unless one is given (0: none, 100 calls per variant).
# Measured on an H100 (docs/gpu-validation.md): 36 identity candidates whose calls it cut (eager > 10 ms)
# all came within 0.8 % of 1.0, and a cold 10-kernel bundle took 192 s instead of about 250 s.
DEFAULT_TIMING_BUDGET_MS = {"cuda": 1000.0, "cpu": 0.0}
# The shortest time one timed call can take (ms): the host clock's 1 ns; on a GPU, CUDA events' ~0.5 us.
MIN_SAMPLE_MS = {"cpu": 1e-6, "cuda": 5e-4}


@dataclass(frozen=True)
class TimingPlan:
    """How the candidate and the baselines are timed."""

    trials: int
    warmup: int
    baseline_warmup: int
    compile_warmup: int
    discard_first: int
    interleaved: bool
    round_calls: int  # calls per variant in one round; the sides alternate round by round
    fresh_inputs: bool  # new inputs (a new seed) for every call; else the same tensors every call
    device_sync_before_end: bool
    l2_flush: bool
    statistic: str
    calibration_calls: int  # eager calls timed with no candidate on the device, before and after it
    # Hardened, when set: after the first round, the timed calls per variant are cut to those that fill
    # budget_ms at the slowest variant's median, never below min_trials (0: always `trials`).
    budget_ms: float = 0.0
    min_trials: int = 0
    # Hardened, when set: each round holds the calls that fill round_ms at the slowest side's time per call
    # on the harness's clock, between min_round_calls and round_calls (0: always round_calls).
    round_ms: float = 0.0
    min_round_calls: int = 1
    round_warmup: int = 0  # hardened: untimed calls opening every round after the first, on each side

    def trials_within_budget(self, slowest_ms: float) -> int:
        """Calls per variant, the first round's medians known: all of them, or those that fill the budget."""
        if self.budget_ms <= 0 or slowest_ms <= 0:
            return self.trials
        wanted = math.ceil(self.budget_ms / slowest_ms)
        return max(self.min_trials, min(self.trials, wanted))

    def calls_per_round(self, call_ms: float | None) -> int:
        """Calls in one round where one call takes call_ms of the harness's clock (unknown: round_calls)."""
        if self.round_ms <= 0 or not call_ms or call_ms <= 0:
            return self.round_calls
        fitting = int(self.round_ms // call_ms)
        return max(min(self.min_round_calls, self.round_calls), min(self.round_calls, fitting))


@dataclass(frozen=True)
class Budget:
    """How long a candidate's calls may take, scaled to the task's eager time (seconds)."""

    first_call_s: float  # the first call also compiles (Triton JIT, lazy builds)
    per_call_factor: float  # times the eager median
    per_call_margin_s: float
    transfer_bytes_per_s: float  # the least throughput allowed for moving an output to the reference

    def call_limit(self, eager_ms: float | None, cap_s: float) -> float:
        """Seconds one call after the first may take."""
        scaled = self.per_call_factor * (eager_ms or 0.0) / 1e3 + self.per_call_margin_s
        return min(cap_s, scaled)

    def first_limit(self, eager_ms: float | None, cap_s: float) -> float:
        return min(cap_s, self.first_call_s + self.call_limit(eager_ms, cap_s))

    def transfer_limit(self, output_bytes: int, cap_s: float) -> float:
        return min(cap_s, output_bytes / self.transfer_bytes_per_s + self.per_call_margin_s)


BUDGETS = {
    "cuda": Budget(first_call_s=60.0, per_call_factor=50.0, per_call_margin_s=2.0, transfer_bytes_per_s=5e8),
    # The Triton interpreter runs kernels thousands of times slower than eager: the margin carries it.
    "cpu": Budget(
        first_call_s=60.0, per_call_factor=1000.0, per_call_margin_s=30.0, transfer_bytes_per_s=1e8
    ),
}


@dataclass(frozen=True)
class Policy:
    """Everything a mode decides, for one device."""

    mode: str
    device: str
    tolerance: float
    kernelbench_trials: int
    extra_trials: tuple[tuple[str, int], ...]
    candidate_first: bool  # False: the task's Model runs first in the candidate's process (KernelBench)
    check_inputs: bool  # mutation, aliasing, NaN/Inf
    poison_memory: bool
    post_timing_check: bool
    timing: TimingPlan
    baselines: tuple[str, ...] = field(default=BASELINES)

    @property
    def speedup_statistic(self) -> str:
        return self.timing.statistic

    @property
    def budget(self) -> Budget:
        return BUDGETS[self.device]


def timing_plan(
    mode: str,
    device: str,
    trials: int | None,
    warmup: int | None,
    budget_ms: float | None = None,
    round_calls: int | None = None,
) -> TimingPlan:
    """KernelBench's cuda_event loop in compatibility mode; interleaved rounds, fresh inputs when hardened
    (their count cut to a time budget: the device's default unless one is given, 0 for none; on a GPU each
    round sized by time, unless a round size is given)."""
    on_gpu = device == "cuda"
    budget_ms = DEFAULT_TIMING_BUDGET_MS[device] if budget_ms is None else budget_ms
    count = trials or (100 if on_gpu else 10)
    if mode == "kernelbench":
        return TimingPlan(
            trials=count,
            warmup=3 if warmup is None else warmup,
            baseline_warmup=3 if warmup is None else warmup,
            compile_warmup=5 if warmup is None else warmup,
            discard_first=1,
            interleaved=False,
            round_calls=count + 1,
            fresh_inputs=False,
            device_sync_before_end=False,
            l2_flush=on_gpu,
            statistic="mean",
            calibration_calls=0,
        )
    fixed_rounds = round_calls is not None  # a size given is kept for every round
    round_calls = min(count, round_calls or ROUND_CALLS[device])
    return TimingPlan(
        trials=count,
        warmup=(5 if on_gpu else 2) if warmup is None else warmup,
        baseline_warmup=(5 if on_gpu else 2) if warmup is None else warmup,
        compile_warmup=(5 if on_gpu else 2) if warmup is None else warmup,
        discard_first=0,
        interleaved=True,
        round_calls=round_calls,
        fresh_inputs=True,
        device_sync_before_end=True,
        l2_flush=on_gpu,
        statistic=ROUND_PAIRS if on_gpu else "median",
        calibration_calls=10 if on_gpu else 3,
        budget_ms=float(budget_ms or 0.0),
        min_trials=min(count, budget_floor(device, round_calls)) if budget_ms else 0,
        round_ms=0.0 if fixed_rounds else ROUND_MS[device],
        min_round_calls=ROUND_MIN_CALLS,
        round_warmup=ROUND_WARMUP[device],
    )


def budget_floor(device: str, round_calls: int) -> int:
    """The fewest calls per variant a time budget leaves: two rounds, of the default size at least (40 calls
    on a GPU)."""
    return MIN_ROUNDS_IN_BUDGET * max(round_calls, ROUND_CALLS[device])


def make_policy(
    mode: str,
    device: str,
    *,
    tolerance: str = "fp32",
    baselines: tuple[str, ...] = BASELINES,
    trials: int | None = None,
    warmup: int | None = None,
    timing_budget_ms: float | None = None,
    round_calls: int | None = None,
) -> Policy:
    """The policy for a mode and device; raises ValueError on an unknown name."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; expected one of {DEVICES}")
    if tolerance not in TOLERANCES:
        raise ValueError(f"unknown tolerance {tolerance!r}; expected one of {tuple(TOLERANCES)}")
    unknown = set(baselines) - set(BASELINES)
    if unknown:
        raise ValueError(f"unknown baselines {sorted(unknown)}; expected some of {BASELINES}")
    if trials is not None and trials < 1:
        raise ValueError(f"trials must be at least 1, not {trials}")
    if round_calls is not None and round_calls < 1:
        raise ValueError(f"round_calls must be at least 1, not {round_calls}")
    if timing_budget_ms is not None and not timing_budget_ms >= 0:
        raise ValueError(f"timing_budget_ms must be 0 or more, not {timing_budget_ms}")
    hardened = mode == "hardened"
    return Policy(
        mode=mode,
        device=device,
        tolerance=TOLERANCES[tolerance],
        kernelbench_trials=KERNELBENCH_TRIALS,
        extra_trials=EXTRA_TRIALS if hardened else (),
        candidate_first=hardened,
        check_inputs=hardened,
        poison_memory=hardened,
        post_timing_check=hardened,
        timing=timing_plan(mode, device, trials, warmup, timing_budget_ms, round_calls),
        baselines=tuple(baselines),
    )
