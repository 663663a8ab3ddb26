"""Inside the sandbox: pin the precision settings, and notice when candidate code changes them or torch."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional

import evaluator.fingerprint
import evaluator.timing

WATCHED_NAMESPACES = {
    "torch": lambda: vars(torch),
    "torch.Tensor": lambda: vars(torch.Tensor),
    "torch.nn.functional": lambda: vars(torch.nn.functional),
    "torch.nn.Module": lambda: vars(torch.nn.Module),
    "torch.linalg": lambda: vars(torch.linalg),
    "torch.cuda": lambda: vars(torch.cuda),
    "torch.cuda.Event": lambda: vars(torch.cuda.Event),
    "torch.testing": lambda: vars(torch.testing),
    "time": lambda: vars(time),
    "evaluator.timing": lambda: vars(evaluator.timing),
    "evaluator.fingerprint": lambda: vars(evaluator.fingerprint),
}

# What torch.compile itself sets on the class of a module it compiles (torch._dynamo.mutation_guard).
COMPILE_SETS = {"__setattr__", "___needs_mutation_patch"}

Namespaces = dict[str, Callable[[], dict[str, Any]]]


def set_precision_defaults() -> None:
    """Full fp32 everywhere, as the reference is computed; the same on both sides of the sandbox."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    torch.set_float32_matmul_precision("highest")


def precision_state() -> dict[str, Any]:
    """The global numeric settings a kernel could flip to make a low-precision result agree."""
    matmul = torch.backends.cuda.matmul
    return {
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cuda_matmul_allow_tf32": matmul.allow_tf32,
        "cuda_matmul_allow_fp16_reduced_precision_reduction": matmul.allow_fp16_reduced_precision_reduction,
        "cuda_matmul_allow_bf16_reduced_precision_reduction": matmul.allow_bf16_reduced_precision_reduction,
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "cudnn_enabled": torch.backends.cudnn.enabled,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "default_dtype": str(torch.get_default_dtype()),
    }


def task_namespaces(task: ModuleType, reference: torch.nn.Module | None) -> Namespaces:
    """What the harness uses of the task: its module, the classes it defines, its reference's classes."""
    classes = [value for value in vars(task).values() if isinstance(value, type)]
    classes = [value for value in classes if value.__module__ == task.__name__]
    if reference is not None:
        classes += [klass for module in reference.modules() for klass in type(module).__mro__]
    namespaces: Namespaces = {task.__name__: lambda: vars(task)}
    for klass in classes:
        if klass not in (torch.nn.Module, object):
            namespaces[f"{task.__name__}:{klass.__module__}.{klass.__qualname__}"] = lambda k=klass: vars(k)
    return namespaces


def function_identities(task: Namespaces | None = None) -> dict[str, int]:
    """id() of every callable in the watched namespaces and of everything in the task's, from __dict__."""
    identities = {}
    for prefix, namespace in WATCHED_NAMESPACES.items():
        for name, value in list(namespace().items()):
            if callable(value) and not isinstance(value, ModuleType):
                identities[f"{prefix}.{name}"] = id(value)
    for prefix, namespace in (task or {}).items():
        for name, value in list(namespace().items()):
            if name not in COMPILE_SETS:
                identities[f"{prefix}.{name}"] = id(value)
    return identities


@dataclass
class Snapshot:
    """The state before candidate code runs, with the live objects kept so their ids stay unique."""

    precision: dict[str, Any]
    identities: dict[str, int]
    threads: set[int]
    keep_alive: list[Any] = field(default_factory=list)
    task: Namespaces = field(default_factory=dict)

    @classmethod
    def take(cls, task: Namespaces | None = None) -> Snapshot:
        """The state now; `task` (task_namespaces) is watched whole: any attribute set, added or deleted."""
        task = task or {}
        namespaces = [*WATCHED_NAMESPACES.values(), *task.values()]
        keep = [value for namespace in namespaces for value in namespace().values()]
        threads = {t.ident for t in threading.enumerate()}
        return cls(precision_state(), function_identities(task), threads, keep, task)

    def again(self) -> Snapshot:
        """A new snapshot of the same namespaces."""
        return Snapshot.take(self.task)

    def differences(self, allowed_threads: set[int] | None = None) -> dict[str, Any]:
        """What changed since the snapshot: precision settings, replaced functions, new Python threads."""
        now = precision_state()
        identities = function_identities(self.task)
        replaced = {name for name, ident in self.identities.items() if identities.get(name, ident) != ident}
        task_names = tuple(f"{prefix}." for prefix in self.task)
        replaced |= {name for name in set(identities) ^ set(self.identities) if name.startswith(task_names)}
        replaced = sorted(replaced)
        threads = {t.ident for t in threading.enumerate() if t.is_alive()} - self.threads
        threads -= allowed_threads or set()
        return {
            "precision_changed": sorted(key for key, value in now.items() if self.precision[key] != value),
            "functions_replaced": replaced,
            "new_threads": len(threads),
        }
