"""Inside the candidate's process: pin the precision settings, and find any state the candidate leaves behind.

Generic rules, not signatures of known kernels. Cheap checks run after every call: global nn.Module hooks,
torch function and dispatch modes on the stack, tracing, profiling and audit hooks (sys, threading,
sys.monitoring, Triton's runtime hooks), garbage-collector callbacks, signal handlers and interval timers,
thread settings, precision flags, Python and OS threads. Full checks run after the
import and after every stage and timing round: the identity of every callable in every loaded torch and
Triton module and class (torch._C included), in the harness's own modules and in the task, and of what it
runs (a Python function's code, defaults and keyword defaults, which can be swapped under the same object;
a module's class, through which every attribute lookup goes; a class's bases), and the kernels registered
for every aten and prims operator (an override through torch.library or a C++ TORCH_LIBRARY_IMPL changes
them).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.modules.module as module_hooks

from evaluator.child.code_swaps import Runs, RunsRecord, note_runs, runs_of
from evaluator.child.watched import (
    COMPILE_SETS,
    FlatRecord,
    Watched,
    flat_record,
    record_modules,
    replaced_since,
    stale_modules,
)

Namespaces = dict[str, Callable[[], dict[str, Any]]]

# Keys of an operator's dispatch table that decide which kernel runs on the CPU or a CUDA GPU.
DISPATCH_KEYS = (
    "CPU",
    "CUDA",
    "CompositeImplicitAutograd",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "AutogradCPU",
    "AutogradCUDA",
    "Autograd",
    "AutogradOther",
    "BackendSelect",
)
OPERATOR_NAMESPACES = ("aten::", "prims::")
SIGNALS = sorted(signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP})
ITIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)


AUDIT_HOOKS_ADDED = [0]  # sys.addaudithook calls since watch_audit_hooks()


def watch_audit_hooks() -> None:
    """Count every sys.addaudithook from now on (Python can neither list nor remove an audit hook, and each
    one runs code at every audited event, after any call): install before candidate code runs."""

    def count(event: str, _arguments: tuple) -> None:
        if event == "sys.addaudithook":
            AUDIT_HOOKS_ADDED[0] += 1

    sys.addaudithook(count)


_DisableTorchFunction = torch._C.DisableTorchFunction
_DisableTorchDispatch = torch._C._DisableTorchDispatch


@contextlib.contextmanager
def harness_reads():
    """The harness's own reads of an output (copies, fingerprints, facts) with torch function and dispatch
    modes off: a mode the kernel left on the stack cannot run code when the harness looks at its output."""
    with _DisableTorchFunction(), _DisableTorchDispatch():
        yield


def set_precision_defaults() -> None:
    """Full fp32 everywhere, as the reference is computed; the same in every process of the harness."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    torch.set_float32_matmul_precision("highest")


def settle_torch(device: str) -> None:
    """What both children of a task set before anything runs: full fp32, no autograd, and on the CPU one
    thread each (two processes take turns on a shared CPU: neither may crowd the other)."""
    set_precision_defaults()
    torch.set_grad_enabled(False)
    if device == "cpu":
        torch.set_num_threads(1)


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


def hook_state() -> dict[str, Any]:
    """Global hooks and modes that run code around every call (the cheap check, after every call)."""
    state: dict[str, Any] = {
        name: len(value)
        for name, value in vars(module_hooks).items()
        if name.startswith("_global_") and isinstance(value, dict | list)
    }
    state["torch_function_modes"] = torch._C._len_torch_function_stack()
    state["torch_dispatch_modes"] = torch._C._len_torch_dispatch_stack()
    state["sys.gettrace"] = sys.gettrace() is not None
    state["sys.getprofile"] = sys.getprofile() is not None
    state["threading trace hook"] = getattr(threading, "_trace_hook", None) is not None
    state["threading profile hook"] = getattr(threading, "_profile_hook", None) is not None
    # A collector callback runs at the next collection, which the harness's own reads of an output set off;
    # a Python signal handler (an interval timer's, say) between any two of the harness's bytecodes
    state["gc.callbacks"] = len(gc.callbacks)
    state["signal handlers"] = python_signal_handlers()
    state["native fault handlers"] = native_fault_handlers()
    state["interval timers"] = sum(signal.getitimer(timer) != (0.0, 0.0) for timer in ITIMERS)
    state["sys.addaudithook calls"] = AUDIT_HOOKS_ADDED[0]
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        state["sys.monitoring tools"] = sum(monitoring.get_tool(tool) is not None for tool in range(6))
    state.update(triton_hooks())
    return state


def python_signal_handlers() -> str:
    """The signals with a Python handler and which one (a handler installed or replaced changes it)."""
    handlers = ((number, signal.getsignal(number)) for number in SIGNALS)
    return " ".join(f"{signal.Signals(n).name}:{id(h):x}" for n, h in handlers if callable(h))


# Signals a memory access raises: a handler installed natively (ctypes' sigaction, a library) could fill an
# output's protected pages on the harness's first read of them, beyond the timed call; signal.getsignal
# sees only Python's handlers, the kernel's mask of caught signals sees every one.
FAULT_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGTRAP)


def native_fault_handlers() -> str:
    """The fault signals this process catches, by any handler (SigCgt of /proc/self/status)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            caught = next((int(line.split()[1], 16) for line in status if line.startswith("SigCgt:")), 0)
    except OSError:
        return "unread"
    return " ".join(sig.name for sig in FAULT_SIGNALS if caught >> (sig - 1) & 1)


def triton_hooks() -> dict[str, int]:
    """Triton's runtime hooks (launch, load, JIT cache) that call anything, with how many functions each
    calls, where Triton is loaded: a hook run around a launch could do work when the harness's own kernels
    read an output. Unset hooks are left out, so Triton loaded after the snapshot changes nothing."""
    runtime = getattr(sys.modules.get("triton.knobs"), "runtime", None)
    state = {}
    for name in dir(runtime) if runtime is not None else ():
        if name.endswith("_hook") and not name.startswith("_"):
            value = getattr(runtime, name, None)
            calls = getattr(value, "calls", None)
            count = len(calls) if isinstance(calls, list) else int(value is not None)
            if count:
                state[f"triton.knobs.runtime.{name}"] = count
    return state


def thread_settings() -> dict[str, Any]:
    return {
        "torch.get_num_threads": torch.get_num_threads(),
        "torch.get_num_interop_threads": torch.get_num_interop_threads(),
    }


def os_threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def task_identities(task: Namespaces, keep: list[Any]) -> dict[str, int]:
    identities = {}
    for prefix, namespace in task.items():
        for name, value in list(namespace().items()):
            if name not in COMPILE_SETS:
                identities[f"{prefix}.{name}"] = id(value)
                keep.append(value)
    return identities


def task_runs(task: Namespaces, runs: dict[int, Runs]) -> list[Runs]:
    """`runs` with what the task's own functions run: every watched Python function, once."""
    for prefix, namespace in task.items():
        note_runs(runs, prefix, {n: v for n, v in namespace().items() if n not in COMPILE_SETS})
    return list(runs.values())


def dispatch_dumps() -> dict[str, str]:
    """Every aten and prims operator's dispatch table, as torch prints it."""
    return {
        name: torch._C._dispatch_dump_table(name)
        for name in torch._C._dispatch_get_all_op_names()
        if name.startswith(OPERATOR_NAMESPACES)
    }


def deciding_digest(table: str) -> str:
    """A digest of a table's lines for the keys that decide the kernels run on the CPU and CUDA."""
    lines = [line for line in table.splitlines() if line.split(":", 1)[0] in DISPATCH_KEYS]
    return hashlib.blake2b("\n".join(lines).encode(), digest_size=8).hexdigest()


def dispatch_tables() -> dict[str, tuple[int, str]]:
    """Each operator's (hash of its whole table, digest of its deciding lines): a check compares the cheap
    hash first and reads the lines only of a table that changed."""
    return {name: (hash(table), deciding_digest(table)) for name, table in dispatch_dumps().items()}


def operators_added(before: dict[str, tuple[int, str]]) -> dict[str, tuple[int, str]]:
    """`before` with the aten and prims operators registered since (listing the names takes milliseconds)."""
    names = torch._C._dispatch_get_all_op_names()
    added = [name for name in names if name.startswith(OPERATOR_NAMESPACES) and name not in before]
    tables = {name: torch._C._dispatch_dump_table(name) for name in added}
    return before | {name: (hash(table), deciding_digest(table)) for name, table in tables.items()}


def overridden(before: dict[str, tuple[int, str]]) -> list[str]:
    """The operators whose CPU or CUDA kernels changed since dispatch_tables() gave `before`."""
    now = dispatch_dumps()
    return sorted(
        name
        for name, (whole, digest) in before.items()
        if name in now and hash(now[name]) != whole and deciding_digest(now[name]) != digest
    )


def task_namespaces(task: types.ModuleType, reference: torch.nn.Module | None) -> Namespaces:
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


def call_state() -> dict[str, Any]:
    """The state quick() compares after every call, as it is now."""
    return {
        "precision": precision_state(),
        "hooks": hook_state(),
        "threads_settings": thread_settings(),
        "threads": {t.ident for t in threading.enumerate()},
        "os_threads": os_threads(),
    }


@dataclass
class Snapshot:
    """The state before candidate code runs, with the live objects kept so their ids stay unique."""

    precision: dict[str, Any]
    hooks: dict[str, Any]
    threads_settings: dict[str, Any]
    modules: dict[str, Watched]
    tasks: dict[str, int]
    operators: dict[str, tuple[int, str]]
    threads: set[int]
    os_threads: int
    functions: RunsRecord = field(default_factory=lambda: RunsRecord([]))  # what watched functions run
    task: Namespaces = field(default_factory=dict)
    keep_alive: list[Any] = field(default_factory=list)
    full_seconds: float = 0.0
    flat: FlatRecord | None = None  # the modules' record in flat sequences (what a full check compares first)

    @classmethod
    def take(cls, task: Namespaces | None = None) -> Snapshot:
        started = time.perf_counter()
        keep: list[Any] = []
        runs: dict[int, Runs] = {}
        task = task or {}
        snapshot = cls(
            **call_state(),
            modules=record_modules(keep, runs),
            tasks=task_identities(task, keep),
            functions=RunsRecord(task_runs(task, runs)),
            operators=dispatch_tables(),
            task=task,
            keep_alive=keep,
        )
        snapshot.flat = flat_record(snapshot.modules)
        snapshot.full_seconds = time.perf_counter() - started
        return snapshot

    def refresh(self, task: Namespaces) -> Snapshot:
        """Made current where only the harness's code ran since it was taken (a snapshot taken as the kernel's
        process booted, before its turn): the modules loaded or changed since recorded again, what every
        function runs, the per-call state and the task's namespaces (the reference's classes, where it was
        built since) taken now, and the tables of operators registered since added. The other operators'
        tables are kept: setting up the device registers no kernel for an existing operator."""
        started = time.perf_counter()
        keep: list[Any] = []
        swapped = self.functions.swapped()  # by the harness's own code: recorded again (usually none)
        runs = {
            id(found.function): runs_of(found.name, found.function) if found.name in swapped else found
            for found in self.functions.functions
        }
        stale = stale_modules(self.modules, self.flat or flat_record(self.modules))
        self.modules.update(record_modules(keep, runs, stale))
        self.flat = flat_record(self.modules)
        for key, value in call_state().items():
            setattr(self, key, value)
        self.operators = operators_added(self.operators)
        self.task = task
        self.tasks = task_identities(task, keep)
        self.functions = RunsRecord(task_runs(task, runs))
        self.keep_alive.extend(keep)
        self.full_seconds = time.perf_counter() - started
        return self

    @classmethod
    def for_calls(cls) -> Snapshot:
        """Only what quick() compares, none of the modules, classes and operator tables full() walks (a
        fraction of a second to record): for a process that mirrors the kernel's per-call check."""
        return cls(**call_state(), modules={}, tasks={}, operators={})

    def quick(self) -> dict[str, Any]:
        """What changed that is cheap to see (after every call)."""
        hooks = hook_state()
        settings = thread_settings()
        threads = {t.ident for t in threading.enumerate() if t.is_alive()} - self.threads
        return {
            "precision_changed": sorted(
                k for k, v in precision_state().items() if self.precision.get(k) != v
            ),
            "hooks": sorted(
                f"{k}: {self.hooks.get(k)} -> {v}" for k, v in hooks.items() if self.hooks.get(k) != v
            ),
            "thread_settings": sorted(
                f"{k}: {self.threads_settings[k]} -> {v}"
                for k, v in settings.items()
                if self.threads_settings[k] != v
            ),
            "new_threads": len(threads),
            "new_os_threads": max(0, os_threads() - self.os_threads),
        }

    def full(self, operators: bool = True) -> dict[str, Any]:
        """Everything (after the import, each stage and each timing round); operators: the slow part."""
        report = self.quick()
        keep: list[Any] = []
        replaced = replaced_since(self.modules, self.flat.suspects() if self.flat else None)
        replaced |= {f"{name} (its code or defaults)" for name in self.functions.swapped()}
        tasks = task_identities(self.task, keep)
        replaced |= {name for name, ident in self.tasks.items() if tasks.get(name) != ident}
        replaced |= set(tasks) - set(self.tasks)
        report["functions_replaced"] = sorted(replaced)
        if operators:
            report["operators_overridden"] = overridden(self.operators)
        return report


def merge(*reports: dict[str, Any]) -> dict[str, Any]:
    """One report from several: lists joined, counts at their largest."""
    merged: dict[str, Any] = {}
    for report in reports:
        for key, value in report.items():
            if isinstance(value, list):
                merged[key] = sorted(set(merged.get(key, [])) | set(value))
            else:
                merged[key] = max(merged.get(key, 0), value)
    return merged
