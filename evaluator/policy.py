"""What each mode checks and how it times: the numbers that make hardened and KernelBench modes differ."""

from __future__ import annotations

from dataclasses import dataclass, field

MODES = ("hardened", "kernelbench")
DEVICES = ("cpu", "cuda")
BASELINES = ("eager", "compile")

# KernelBench: fp32 1e-4 since PR #80; v0 and v0.1 used 1e-2 (for fp16/bf16 it is still 1e-2).
TOLERANCES = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2, "v0.1": 1e-2}
KERNELBENCH_SEED = 42
KERNELBENCH_TRIALS = 5

# Hardened extra trials: (distribution, seed). Seeds are fixed so verdicts are reproducible.
EXTRA_TRIALS = (("signed", 1_000_003), ("signed", 1_000_033), ("heavy_tailed", 2_000_003))
TIMING_SEED_BASE = 3_000_000
POST_TIMING_SEED = 4_000_037
CALIBRATION_TRIALS = 5  # trusted timing of the eager reference, per task, in the harness's own process
# Cross-checks of what the sandbox claims against the harness's own clock (evaluator.flags):
# Claimed samples may exceed the host-timed loop by this (scale, ms), the harness's own wake-up latency:
CLAIMS_SLACK = {"cuda": (1.02, 5.0), "cpu": (1.10, 50.0)}
HIDDEN_FRACTION, HIDDEN_MIN_MS = 0.5, 25.0  # GPU: loop time no claim explains, beyond the calibrated overhead
BASELINE_RATIO = 3.0  # GPU: claimed eager median over the harness's own eager median
TASK_MODULE = "kb_task"  # the task module's name in the sandbox (and the prefix of its watched names)
# The shortest time one timed call can take (ms): the host clock's 1 ns; on a GPU, CUDA events' ~0.5 us.
MIN_SAMPLE_MS = {"cpu": 1e-6, "cuda": 5e-4}


@dataclass(frozen=True)
class TimingPlan:
    """How the candidate and the baselines are timed."""

    trials: int
    warmup: int
    baseline_warmup: int
    discard_first: int
    interleaved: bool
    rotate_inputs: int  # number of input sets cycled through; 1 = the same tensors every call
    clone_inputs: bool  # fresh buffers before every timed call (defeats pointer-keyed caches)
    fresh_inputs: bool  # after the first rotation, new input contents every round (content caches)
    device_sync_before_end: bool
    l2_flush: bool
    statistic: str


@dataclass(frozen=True)
class Policy:
    """Everything a mode decides, for one device."""

    mode: str
    device: str
    tolerance: float
    kernelbench_trials: int
    extra_trials: tuple[tuple[str, int], ...]
    candidate_first: bool
    check_inputs: bool  # mutation, aliasing, exact tensor type, NaN/Inf
    poison_memory: bool
    post_timing_check: bool
    timing: TimingPlan
    baselines: tuple[str, ...] = field(default=BASELINES)

    @property
    def speedup_statistic(self) -> str:
        return self.timing.statistic


def timing_plan(mode: str, device: str, trials: int | None, warmup: int | None) -> TimingPlan:
    """KernelBench's cuda_event loop in compatibility mode; interleaved, rotating, synced when hardened."""
    on_gpu = device == "cuda"
    if mode == "kernelbench":
        return TimingPlan(
            trials=trials or (100 if on_gpu else 10),
            warmup=3 if warmup is None else warmup,
            baseline_warmup=5 if warmup is None else warmup,
            discard_first=1,
            interleaved=False,
            rotate_inputs=1,
            clone_inputs=False,
            fresh_inputs=False,
            device_sync_before_end=False,
            l2_flush=on_gpu,
            statistic="mean",
        )
    return TimingPlan(
        trials=trials or (100 if on_gpu else 10),
        warmup=(5 if on_gpu else 2) if warmup is None else warmup,
        baseline_warmup=(5 if on_gpu else 2) if warmup is None else warmup,
        discard_first=0,
        interleaved=True,
        rotate_inputs=4 if on_gpu else 2,
        clone_inputs=True,
        fresh_inputs=True,
        device_sync_before_end=True,
        l2_flush=on_gpu,
        statistic="median",
    )


def make_policy(
    mode: str,
    device: str,
    *,
    tolerance: str = "fp32",
    baselines: tuple[str, ...] = BASELINES,
    trials: int | None = None,
    warmup: int | None = None,
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
        timing=timing_plan(mode, device, trials, warmup),
        baselines=tuple(baselines),
    )
