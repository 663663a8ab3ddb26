"""The trusted side: load the task, draw inputs, compute expected outputs before any candidate runs."""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import logging
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from evaluator import integrity, timing
from evaluator.canaries import null_canaries
from evaluator.fingerprint import fingerprint
from evaluator.policy import CALIBRATION_TRIALS, POST_TIMING_SEED, TIMING_SEED_BASE, Policy
from evaluator.sources import task_identity

logger = logging.getLogger(__name__)


class TaskError(Exception):
    """The task file itself is broken (not the kernel's fault)."""


@dataclass
class TrialCase:
    seed: int
    distribution: str
    order: str
    inputs: list[Any]
    expected: torch.Tensor


@dataclass
class PreparedTask:
    """Inputs and expected outputs of one task under one policy, ready to hand to any number of kernels."""

    path: Path
    source: str
    identity: dict[str, Any]
    init_inputs: list[Any]
    trials: list[TrialCase]
    timing_sets: list[list[Any]]
    timing_fingerprints: list[list[float]]
    post_trials: list[TrialCase]
    skipped: list[str] = field(default_factory=list)
    stochastic: bool = False
    payload_file: Path | None = None
    trusted_eager_ms: float | None = None
    loop_overhead_ms: float = 0.0
    canaries: list[dict[str, Any]] = field(default_factory=list)
    canary_outputs: dict[str, list[torch.Tensor]] = field(default_factory=dict)

    @property
    def degenerate(self) -> bool:
        return any(canary["passed"] for canary in self.canaries)

    @property
    def output_bytes(self) -> int:
        expected = self.trials[0].expected
        return expected.numel() * expected.element_size()

    @property
    def payload_bytes(self) -> int:
        """Bytes of every tensor the child receives (the inputs file holds them all)."""
        sets = [trial.inputs for trial in self.trials + self.post_trials] + self.timing_sets
        sets.append(self.init_inputs)
        return sum(v.numel() * v.element_size() for s in sets for v in s if isinstance(v, torch.Tensor))

    @property
    def io_bytes(self) -> int:
        """Bytes a kernel must at least read and write once: every tensor input and the output."""
        inputs = sum(v.numel() * v.element_size() for v in self.timing_sets[0] if isinstance(v, torch.Tensor))
        return inputs + self.output_bytes

    def write_payload(self, target: Path) -> None:
        """Put a private copy of the inputs file at target: serialised once per task, then copied."""
        if self.payload_file is None or not self.payload_file.exists():
            folder = Path(tempfile.mkdtemp(prefix="kb-task-"))
            atexit.register(shutil.rmtree, folder, True)
            self.payload_file = folder / "inputs.pt"
            torch.save(self.child_payload(), self.payload_file)
        shutil.copyfile(self.payload_file, target)

    def child_payload(self) -> dict[str, Any]:
        """What the sandbox receives: inputs only, never an expected output."""
        return {
            "init_inputs": self.init_inputs,
            "trials": [_trial_inputs(trial) for trial in self.trials],
            "timing_sets": self.timing_sets,
            "post_trials": [_trial_inputs(trial) for trial in self.post_trials],
        }


def _trial_inputs(trial: TrialCase) -> dict[str, Any]:
    return {
        "seed": trial.seed,
        "distribution": trial.distribution,
        "order": trial.order,
        "inputs": trial.inputs,
    }


def load_task_module(path: Path):
    """Import a task file under a private name (task files are trusted: ours or an imported suite)."""
    name = f"kb_reference_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise TaskError(f"the task {path} does not import: {error!r}") from error
    for required in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, required):
            raise TaskError(f"the task {path} defines no {required}")
    return module


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)


def kernelbench_trial_seeds(count: int, seed: int = 42) -> list[int]:
    """KernelBench's correctness seeds: manual_seed(42), then randint(0, 2**32 - 1) per trial."""
    torch.manual_seed(seed)
    return [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(count)]


def cast_inputs(values: list[Any]) -> list[Any]:
    """Floating tensors to fp32; integer tensors keep their dtype (KernelBench PR #152, not its bug #151)."""
    return [
        value.to(torch.float32) if isinstance(value, torch.Tensor) and value.is_floating_point() else value
        for value in values
    ]


def draw(distribution: str, like: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Signed (standard normal) or heavy-tailed (signed Pareto, alpha 3) values of like's shape."""
    if distribution == "signed":
        return torch.randn(like.shape, generator=generator)
    if distribution == "heavy_tailed":
        uniform = torch.rand(like.shape, generator=generator, dtype=torch.float64)
        sign = torch.randint(0, 2, like.shape, generator=generator) * 2 - 1
        return (sign * ((1 - uniform).pow(-1 / 3) - 1)).to(torch.float32)
    raise ValueError(f"unknown input distribution {distribution!r}")


def generate_inputs(module, seed: int, distribution: str) -> list[Any]:
    """The task's get_inputs() after seeding; for other distributions its float tensors are redrawn."""
    seed_everything(seed)
    inputs = cast_inputs(list(module.get_inputs()))
    if distribution == "task":
        return inputs
    generator = torch.Generator().manual_seed(seed)
    return [
        draw(distribution, value, generator)
        if isinstance(value, torch.Tensor) and value.is_floating_point()
        else value
        for value in inputs
    ]


def build_reference(module, device: str) -> tuple[torch.nn.Module, list[Any]]:
    """KernelBench's construction: seed 42, init inputs, seed 42, Model, then to the device in fp32."""
    seed_everything(42)
    init_inputs = cast_inputs(list(module.get_init_inputs()))
    seed_everything(42)
    try:
        model = module.Model(*[_to(value, device) for value in init_inputs])
        model = model.to(device=device, dtype=torch.float32)
    except Exception as error:
        raise TaskError(f"the task's Model cannot be built: {error!r}") from error
    return model, init_inputs


def _to(value: Any, device: str) -> Any:
    return value.to(device) if isinstance(value, torch.Tensor) else value


def run_reference(model: torch.nn.Module, inputs: list[Any], seed: int, device: str) -> torch.Tensor:
    seed_everything(seed)
    try:
        output = model(*[_to(value, device) for value in inputs])
    except Exception as error:
        raise TaskError(f"the task's reference fails on its own inputs: {error!r}") from error
    if type(output) is not torch.Tensor:
        raise TaskError(f"the task's Model returns {type(output).__name__}, not one tensor")
    return output.detach().to("cpu")


def is_stochastic(model: torch.nn.Module, inputs: list[Any], policy: Policy) -> bool:
    """Whether the reference depends on the RNG (dropout, randn in forward): then timed outputs vary."""
    first = run_reference(model, inputs, 1, policy.device)
    second = run_reference(model, inputs, 2, policy.device)
    return not torch.allclose(first, second, atol=policy.tolerance, rtol=policy.tolerance, equal_nan=True)


def correctness_cases(module, model: torch.nn.Module, policy: Policy) -> tuple[list[TrialCase], list[str]]:
    """KernelBench's five trials, then the policy's extra distributions where the reference is finite."""
    order = "candidate_first" if policy.candidate_first else "reference_first"
    cases = [(seed, "task") for seed in kernelbench_trial_seeds(policy.kernelbench_trials)]
    cases += [(seed, distribution) for distribution, seed in policy.extra_trials]
    trials, skipped = [], []
    for seed, distribution in cases:
        inputs = generate_inputs(module, seed, distribution)
        expected = run_reference(model, inputs, seed, policy.device)
        if distribution != "task" and not torch.isfinite(expected).all():
            skipped.append(f"{distribution} (seed {seed}): the reference is not finite on it")
            continue
        trials.append(TrialCase(seed, distribution, order, inputs, expected))
    return trials, skipped


def timing_cases(module, model: torch.nn.Module, policy: Policy) -> tuple[list[list[Any]], list[list[float]]]:
    """The rotating timing input sets and the fingerprints of their reference outputs."""
    sets, fingerprints = [], []
    for index in range(policy.timing.rotate_inputs):
        inputs = generate_inputs(module, TIMING_SEED_BASE + index, "task")
        sets.append(inputs)
        fingerprints.append(fingerprint(run_reference(model, inputs, 0, policy.device)))
    return sets, fingerprints


def post_timing_cases(module, model: torch.nn.Module, policy: Policy) -> list[TrialCase]:
    """One trial after timing, the reference run first in the child: catches kernels that change later."""
    if not policy.post_timing_check:
        return []
    inputs = generate_inputs(module, POST_TIMING_SEED, "task")
    expected = run_reference(model, inputs, POST_TIMING_SEED, policy.device)
    return [TrialCase(POST_TIMING_SEED, "task", "reference_first", inputs, expected)]


def calibrate(module, model: torch.nn.Module, timing_sets: list[list[Any]], policy: Policy):
    """(median eager ms, per-call overhead ms of the timed loop), measured here, out of any sandbox's reach.

    The same loop the sandbox runs (input slots, L2 flush, fresh inputs, fingerprints), with the eager
    reference alone: what the candidate's process later claims is checked against these numbers.
    """
    plan = dataclasses.replace(policy.timing, trials=len(timing_sets) + CALIBRATION_TRIALS)
    sets = [[_to(value, policy.device) for value in values] for values in timing_sets]
    fresh = timing.fresh_inputs(module.get_inputs, policy.device, TIMING_SEED_BASE + 1000)
    record = timing.run_timing({"eager": model}, sets, plan, policy.device, fresh=fresh)
    samples = record.samples["eager"]
    overhead = max(0.0, (record.loop_ms - sum(samples)) / max(len(samples), 1))
    return statistics.median(samples), overhead


def prepare_task(path: Path, policy: Policy) -> PreparedTask:
    """Draw every input set of the policy and compute the reference on each, on the policy's device."""
    source = path.read_text(encoding="utf-8")
    module = load_task_module(path)
    integrity.set_precision_defaults()
    with torch.no_grad():
        model, init_inputs = build_reference(module, policy.device)
        trials, skipped = correctness_cases(module, model, policy)
        timing_sets, timing_fingerprints = timing_cases(module, model, policy)
        stochastic = is_stochastic(model, timing_sets[0], policy)
        post_trials = post_timing_cases(module, model, policy)
        eager_ms, overhead_ms = calibrate(module, model, timing_sets, policy)
    del model
    if policy.device == "cuda":
        torch.cuda.empty_cache()
    prepared = PreparedTask(
        path=path,
        source=source,
        identity=task_identity(path, source),
        init_inputs=init_inputs,
        trials=trials,
        timing_sets=timing_sets,
        timing_fingerprints=timing_fingerprints,
        post_trials=post_trials,
        skipped=skipped,
        stochastic=stochastic,
        trusted_eager_ms=eager_ms,
        loop_overhead_ms=overhead_ms,
    )
    kernelbench_cases = [trial for trial in trials if trial.distribution == "task"]
    prepared.canaries, prepared.canary_outputs = null_canaries(kernelbench_cases, policy.tolerance)
    return prepared
