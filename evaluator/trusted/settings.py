"""How one batch evaluates: policy, stage timeouts, caches, the child interpreter, limits; and its children.

`candidate_child` and `reference_child` build the two kinds of sandboxed child from the settings: what they
are told (the spec), the variables they get, the folders shared with them and their memory file or socket.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.checks import ONE_PASS_BYTES, ONE_PASS_CACHE_VARIABLE
from evaluator.policy import Policy
from evaluator.sandbox import isolation
from evaluator.sandbox.limits import Limits, default_limits
from evaluator.sandbox.process import ChildProcess, Share
from evaluator.trusted.compile_cache import CompileCache
from evaluator.trusted.slots import DEFAULT_SLOT_BYTES, SlotFile

STARTUP_TIMEOUT = 180.0
# PyTorch's CUDA allocator in both children: segments that grow in place, so an allocation that splits a
# cached block (a cuDNN workspace, a fingerprint's rows) costs its own size, not another output-sized segment.
CUDA_ALLOC_CONF = "expandable_segments:True"


class SettingsError(ValueError):
    """A setting of the worker's environment is malformed: nothing is evaluated."""


def one_pass_bytes_from_environment() -> int:
    """EVALUATOR_ONE_PASS_MIB (a whole number of MiB) in bytes, else the default threshold."""
    text = os.environ.get("EVALUATOR_ONE_PASS_MIB", "").strip()
    if not text:
        return ONE_PASS_BYTES
    if not text.isdigit():
        raise SettingsError(f"EVALUATOR_ONE_PASS_MIB must be a whole number of MiB, not {text!r}")
    return int(text) << 20


def cuda_alloc_conf_from_environment() -> str:
    """EVALUATOR_CUDA_ALLOC_CONF (PYTORCH_CUDA_ALLOC_CONF's syntax) when set, empty for PyTorch's default."""
    return os.environ.get("EVALUATOR_CUDA_ALLOC_CONF", CUDA_ALLOC_CONF).strip()


@dataclass
class Settings:
    """How long each stage may take, where builds are cached, and which interpreter runs children."""

    policy: Policy
    compile_timeout: float = 900.0
    run_timeout: float = 600.0
    cache: CompileCache | None = None
    python: str = sys.executable
    arch_list: str | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    memory_limit_mb: int | None = None
    max_tasks: int | None = None
    temp_dir_mb: int | None = None
    slot_bytes: int = DEFAULT_SLOT_BYTES
    # from how many bytes (inputs and output) a GPU problem's fingerprints take the one-pass kernel
    one_pass_bytes: int = field(default_factory=one_pass_bytes_from_environment)
    prestart: bool = True  # start the next kernel's child (and task's reference) while this kernel runs
    # the CUDA allocator's configuration in every child, candidate and reference alike (empty: the default)
    cuda_alloc_conf: str = field(default_factory=cuda_alloc_conf_from_environment)
    # the core both sides' timed calls run on (evaluator.trusted.cores), None to leave it to the scheduler
    timing_cpu: int | None = None

    def limits(self) -> Limits:
        """The children's limits, with the manifest's overrides."""
        return default_limits(
            self.policy.device,
            memory_limit_mb=self.memory_limit_mb,
            max_tasks=self.max_tasks,
            temp_dir_mb=self.temp_dir_mb,
        )

    @property
    def overlapped(self) -> bool:
        return self.prestart


def child_environment(settings: Settings) -> dict[str, str]:
    """Variables every child needs: the GPU arch and allocator configuration, or Triton's interpreter."""
    # Idle OpenMP threads sleep instead of spinning, so a child waiting for its turn takes no CPU time from
    # the one being timed.
    extra = {
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
        "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
        "OMP_WAIT_POLICY": "PASSIVE",
    }
    if settings.policy.device == "cpu":
        extra["TRITON_INTERPRET"] = "1"
        extra["CUDA_VISIBLE_DEVICES"] = ""
        return extra
    if settings.arch_list:
        extra["TORCH_CUDA_ARCH_LIST"] = settings.arch_list
    if settings.cuda_alloc_conf:
        extra["PYTORCH_CUDA_ALLOC_CONF"] = settings.cuda_alloc_conf
    return extra


def common_spec(settings: Settings, role: str, task_path: Path) -> dict[str, Any]:
    policy = settings.policy
    return {
        "role": role,
        "mode": policy.mode,
        "device": policy.device,
        "task_path": str(task_path),
        "tolerance": policy.tolerance,
        "timing": dataclasses.asdict(policy.timing),
        "check_inputs": policy.check_inputs,
        "poison": policy.poison_memory,
        "baselines": list(policy.baselines),
        "timing_cpu": settings.timing_cpu,  # where each role's pinned commands run (Child.PINNED)
    }


# Sources that may import torch._dynamo (which rebinds torch functions on import): imported ahead for them.
DYNAMO_USERS = re.compile(
    r"compile|_dynamo|_inductor|export|custom_op|torch\.library|fx\b|importlib|__import__"
)


def preimports(source: str) -> list[str]:
    return ["torch._dynamo"] if DYNAMO_USERS.search(source) else []


def candidate_child(
    settings: Settings, role: str, kernel_sha: str, slots: SlotFile | None = None, source: str = ""
) -> ChildProcess:
    """A candidate (role 'candidate') or a build of one (role 'build'); task and kernel files added later."""
    shares = []
    if settings.cache is not None:
        folder = settings.cache.prepare(kernel_sha)
        shares.append(Share(folder, isolation.EXTENSIONS_MOUNT, {"TORCH_EXTENSIONS_DIR": ""}))
        if role == "candidate":
            shares += one_pass_cache_copy(settings)
    spec = common_spec(settings, role, Path())
    spec["preimport"] = preimports(source) if role == "candidate" else []
    if slots is not None:
        spec.update(slots.describe())
    return ChildProcess(
        spec,
        settings.limits(),
        child_environment(settings),
        settings.python,
        shares=shares,
        slots_fd=slots.fd if slots is not None else None,
    )


def one_pass_cache_copy(settings: Settings) -> list[Share]:
    """A copy of the one-pass kernel as the reference processes compiled it (their folder, where no
    candidate can write), as the candidate's Triton cache: its process loads the kernel instead of
    compiling it (about a second) at its import. Only with a new root, where the child gets a copy."""
    folder = settings.cache.baseline_dir() / isolation.ONE_PASS_FOLDER
    if not folder.is_dir() or not isolation.cache_is_private(isolation.detect(settings.python)):
        return []
    return [Share(folder, isolation.ONE_PASS_MOUNT, {"TRITON_CACHE_DIR": ""}, copy_only=True)]


def reference_child(settings: Settings, fds_fd: int) -> ChildProcess:
    """The reference process of a task: the worker's torch.compile cache where no candidate can see it."""
    shares = []
    layers = isolation.detect(settings.python)
    if settings.cache is not None and isolation.cache_is_private(layers):
        variables = {
            "TORCHINDUCTOR_CACHE_DIR": "",
            "TRITON_CACHE_DIR": "triton",
            ONE_PASS_CACHE_VARIABLE: isolation.ONE_PASS_FOLDER,
        }
        shares.append(Share(settings.cache.baseline_dir(), isolation.INDUCTOR_MOUNT, variables, direct=True))
    spec = common_spec(settings, "reference", Path())
    return ChildProcess(
        spec,
        settings.limits(),
        child_environment(settings),
        settings.python,
        shares=shares,
        fds_fd=fds_fd,
        reference=True,
    )
