"""The sandboxed side: import the candidate, run it on the harness's inputs, time it, report on a pipe.

Nothing here decides a verdict. Outputs go back by file and are compared in the harness process, which
never imports candidate code; what this process reports is checked there (fingerprints, identities).
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import re
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from evaluator import integrity, timing
from evaluator.policy import TASK_MODULE
from evaluator.protocol import read_command, write_message

NEEDS_GPU_MARKERS = (
    "Torch not compiled with CUDA",
    "CUDA_HOME",
    "No CUDA GPUs",
    "Found no NVIDIA driver",
    "0 active drivers",
    "cuda_sources",
    "nvcc",
    "Cannot find CUDA",
    "CUDA driver",
)
POISON_MIN_BYTES = 64 * 1024 * 1024
# What the sandbox answers to a forbidden access (file system, network, signals, mounts) ...
SANDBOX_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENETUNREACH, errno.EAFNOSUPPORT}
# ... and what a limit answers once reached (temp dir or file size, descriptors, processes).
OUT_OF_MEMORY = re.compile(r"can't allocate memory|Cannot allocate memory|out of memory", re.IGNORECASE)
RESOURCE_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EMFILE, errno.ENFILE, errno.EAGAIN}


class StageFailure(Exception):
    """A failure of the candidate at a stage, with the result's error kind."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    result_fd = spec["result_fd"]
    status = 0
    try:
        Child(spec).run()
    except StageFailure as failure:
        write_message(result_fd, {"event": "failure", "kind": failure.kind, "message": str(failure)})
    except BaseException:  # noqa: BLE001 - anything else is reported, then the process ends hard
        write_message(result_fd, {"event": "harness_error", "message": traceback.format_exc()[-4000:]})
        status = 70
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # no atexit hooks or finalisers registered by candidate code run after this


def load_module(path: str, name: str):
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module


def to_device(values: list[Any], device: str) -> list[Any]:
    return [value.to(device) if isinstance(value, torch.Tensor) else value for value in values]


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)


def classify_exception(error: BaseException, device: str, default: str) -> StageFailure:
    text = f"{type(error).__name__}: {error}"
    if device == "cpu" and any(marker in text for marker in NEEDS_GPU_MARKERS):
        return StageFailure("needs_gpu", f"this kernel needs a CUDA GPU; on a CPU host it fails with {text}")
    details = "".join(traceback.format_exception(error))[-6000:]
    contained = containment(error)
    if contained:
        kind, reason = contained
        return StageFailure(kind, f"{reason}\n{details[-(5000 - min(len(reason), 1000)) :]}")
    return StageFailure(default, details)


def causes(error: BaseException, depth: int = 6) -> list[BaseException]:
    """The error and the ones it was raised from or during, nearest first."""
    chain = []
    while error is not None and len(chain) < depth:
        chain.append(error)
        error = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    return chain


def containment(error: BaseException) -> tuple[str, str] | None:
    """(error kind, reason) when a sandbox layer or a resource limit stopped the kernel, else None."""
    for cause in causes(error):
        name = type(cause).__name__
        if isinstance(cause, MemoryError) or name == "OutOfMemoryError" or OUT_OF_MEMORY.search(str(cause)):
            return "resource_limit", f"stopped by a memory limit: {name}: {cause}"[:2000]
        if isinstance(cause, RuntimeError) and "can't start new thread" in str(cause):
            return "resource_limit", f"stopped by the process limit: {cause}"
        if isinstance(cause, OSError) and cause.errno in RESOURCE_ERRNOS:
            return "resource_limit", f"stopped by a resource limit ({errno.errorcode[cause.errno]}): {cause}"
        if isinstance(cause, OSError) and cause.errno in SANDBOX_ERRNOS:
            return "sandbox_violation", f"blocked by the sandbox ({errno.errorcode[cause.errno]}): {cause}"
    return None


def build_model(model_class: type, init_inputs: list[Any], device: str, kind: str) -> torch.nn.Module:
    """KernelBench's construction: seed 42, the init inputs, then moved and cast to fp32."""
    try:
        seed_everything(42)
        model = model_class(*init_inputs)
        return model.to(device=device, dtype=torch.float32)
    except BaseException as error:  # noqa: BLE001 - candidate code may raise anything, SystemExit too
        raise classify_exception(error, device, kind) from None


def poison_memory(device: str, output_bytes: int) -> None:
    """Fill the allocator's free memory with NaN, so outputs built from stale memory cannot pass."""
    if device != "cuda":
        return
    torch.cuda.empty_cache()
    free, _ = torch.cuda.mem_get_info()
    size = min(max(POISON_MIN_BYTES, 4 * output_bytes), free // 2)
    poison = torch.empty(size // 4, dtype=torch.float32, device="cuda")
    poison.fill_(float("nan"))
    torch.cuda.synchronize()
    del poison  # the block stays in PyTorch's cache, full of NaN


def layout(values: list[Any]) -> list[tuple]:
    """Shape, strides, offset and storage of each tensor: what a re-layout (`set_`, `as_strided_`) changes."""
    return [
        (tuple(v.shape), v.stride(), v.storage_offset(), v.untyped_storage().data_ptr())
        for v in values
        if isinstance(v, torch.Tensor)
    ]


def describe_output(
    output: Any, inputs: list[Any], pristine: list[Any] | None, layout_before: list[tuple]
) -> dict[str, Any]:
    """Facts only this process can see: exact type, device, aliasing, input mutation (values or layout)."""
    if type(output) is not torch.Tensor:
        return {"type": type(output).__qualname__, "exact_tensor": False}
    tensors = [value for value in inputs if isinstance(value, torch.Tensor)]
    storage = output.untyped_storage().data_ptr()
    aliases = any(value.untyped_storage().data_ptr() == storage for value in tensors if value.numel())
    mutated = False
    if pristine is not None:
        before = [value for value in pristine if isinstance(value, torch.Tensor)]
        mutated = layout(inputs) != layout_before or any(
            not torch.equal(now, then) for now, then in zip(tensors, before, strict=True)
        )
    return {"exact_tensor": True, "device": output.device.type, "aliases": aliases, "mutated": mutated}


class Child:
    """One candidate's life in the sandbox: load, compile, construct, correctness, then timing."""

    def __init__(self, spec: dict[str, Any]):
        self.spec = spec
        self.device = spec["device"]
        self.mode = spec["mode"]
        self.workdir = Path(spec["workdir"])
        self.emit: Callable[[dict[str, Any]], None] = lambda message: write_message(
            spec["result_fd"], message
        )
        self.reference = None
        self.candidate = None

    def run(self) -> None:
        integrity.set_precision_defaults()
        torch.set_grad_enabled(False)
        payload = torch.load(self.spec["inputs_path"], weights_only=True) if self.spec["inputs_path"] else {}
        self.init_inputs = to_device(payload.get("init_inputs", []), self.device)
        self.task = load_module(self.spec["task_path"], TASK_MODULE)
        # What the harness needs of the task, taken before candidate code runs: the candidate can reach
        # the module (sys.modules) but not these references; a change to the module or the classes is
        # flagged (integrity.task_namespaces).
        self.get_inputs = self.task.get_inputs
        if self.spec["stage"] == "evaluate":
            self.reference = build_model(self.task.Model, self.init_inputs, self.device, "harness_error")
            if "compile" in self.spec["baselines"] or self.device == "cuda":
                # torch.compile and the profiler import torch._dynamo, which rebinds torch.manual_seed:
                # import it before the snapshot so only the candidate's changes show.
                importlib.import_module("torch._dynamo")
        self.snapshot = integrity.Snapshot.take(integrity.task_namespaces(self.task, self.reference))
        self.emit({"event": "ready"})
        model_class = self.import_candidate()
        if self.spec["stage"] == "compile":
            return
        self.candidate = build_model(model_class, self.init_inputs, self.device, "init_error")
        self.run_correctness(payload["trials"], "correctness.pt")
        self.after_correctness = self.snapshot.differences()
        if read_command(self.spec["command_fd"]).get("cmd") != "time":
            return
        self.run_timing(payload)

    def import_candidate(self) -> type:
        started = time.monotonic()
        try:
            module = load_module(self.spec["kernel_path"], "kb_candidate")
        except BaseException as error:  # noqa: BLE001 - SystemExit from candidate code is a failure too
            raise classify_exception(error, self.device, "compile_error") from None
        model_class = getattr(module, "ModelNew", None)
        if not isinstance(model_class, type):
            raise StageFailure("missing_model_new", "the kernel file defines no class ModelNew")
        self.emit({"event": "compiled", "seconds": time.monotonic() - started})
        return model_class

    def call_candidate(self, inputs: list[Any], seed: int) -> Any:
        seed_everything(seed)
        try:
            output = self.candidate(*inputs)
            timing.synchronize(self.device)
        except BaseException as error:  # noqa: BLE001 - SystemExit from forward is the kernel's fault too
            raise classify_exception(error, self.device, "runtime_error") from None
        return output

    def run_correctness(self, trials: list[dict[str, Any]], file_name: str) -> None:
        """Run every trial; the outputs go to a file, the facts to the harness."""
        reports, outputs = [], []
        for trial in trials:
            inputs = to_device(trial["inputs"], self.device)
            if self.spec["poison"]:
                poison_memory(self.device, self.spec["output_bytes"])
            reference_output = None
            if trial["order"] == "reference_first":
                seed_everything(trial["seed"])
                reference_output = self.reference(*inputs)  # kept alive during the candidate call
            pristine = timing.clone_inputs(inputs) if self.spec["check_inputs"] else None
            layout_before = layout(inputs)
            output = self.call_candidate(inputs, trial["seed"])
            report, saved = self.inspect_output(output, inputs, pristine, layout_before)
            reports.append(report)
            outputs.append(saved)
            del output, reference_output
        self.save_outputs(outputs, file_name)
        self.emit(
            {
                "event": "correctness",
                "file": file_name,
                "trials": reports,
                "integrity": self.snapshot.differences(),
            }
        )

    def save_outputs(self, outputs: list[Any], file_name: str) -> None:
        """Outputs to the temp dir; that dir is the kernel's own, so failing to write there is its doing."""
        try:
            torch.save(outputs, self.workdir / file_name)
        except OSError as error:
            if not self.spec.get("private_temp_dir"):
                raise  # a shared disk may simply be full: the harness's failure, retried
            kind = "resource_limit" if error.errno in RESOURCE_ERRNOS else "sandbox_violation"
            raise StageFailure(
                kind, f"the outputs cannot be saved in the kernel's own temp dir: {error}"
            ) from None

    def inspect_output(
        self, output: Any, inputs: list[Any], pristine: list[Any] | None, layout_before: list[tuple]
    ):
        """The facts about one output and a copy of it taken at once; an unusable tensor is not a tensor."""
        try:
            report = describe_output(output, inputs, pristine, layout_before)
            # A copy, not the tensor itself (on the CPU `.to("cpu")` is): the kernel may change it later.
            saved = output.detach().to("cpu", copy=True) if report["exact_tensor"] else None
        except Exception as error:  # noqa: BLE001 - meta, sparse or otherwise unreadable outputs
            message = f"the output cannot be read as a dense tensor: {error}"
            raise StageFailure("not_a_tensor", message) from None
        return report, saved

    def announce_loop(self, phase: str) -> None:
        """Tell the harness the timed loop starts or ends: it times the loop on its own clock."""
        self.emit({"event": "timing_loop", "phase": phase})

    def run_timing(self, payload: dict[str, Any]) -> None:
        variants = {"candidate": self.candidate}
        if "eager" in self.spec["baselines"]:
            variants["eager"] = self.reference
        input_sets = [to_device(values, self.device) for values in payload["timing_sets"]]
        if "compile" in self.spec["baselines"]:
            variants["compile"] = torch.compile(self.reference)
            variants["compile"](*input_sets[0])  # compiles; torch.compile rebinds a few torch functions
            timing.synchronize(self.device)
        before_timing = self.snapshot.again()
        plan = timing_plan_from(self.spec["timing"])
        fresh = None  # fresh rounds are checked against a baseline's outputs: none without one
        if len(variants) > 1:
            fresh = timing.fresh_inputs(self.get_inputs, self.device, int.from_bytes(os.urandom(4), "little"))
        try:
            record = timing.run_timing(
                variants, input_sets, plan, self.device, fresh=fresh, on_loop=self.announce_loop
            )
            poison_memory(self.device, self.spec["output_bytes"])
            probe = timing.deferred_work_probe(self.candidate, input_sets[0], self.device)
            kernels = (
                timing.profile_kernels(self.candidate, input_sets[0], self.workdir)
                if self.device == "cuda"
                else None
            )
        except BaseException as error:  # noqa: BLE001
            raise classify_exception(error, self.device, "runtime_error") from None
        after_timing = before_timing.differences()
        if payload.get("post_trials"):
            self.run_correctness(payload["post_trials"], "post_timing.pt")
        self.emit(
            {
                "event": "timing",
                "samples": record.samples,
                "fingerprints": record.fingerprints,
                "deferred_probe": probe,
                "kernels": kernels,
                "integrity": merge_integrity(self.after_correctness, after_timing),
            }
        )


def timing_plan_from(values: dict[str, Any]) -> timing.TimingPlan:
    return timing.TimingPlan(**values)


def merge_integrity(after_correctness: dict[str, Any], after_timing: dict[str, Any]) -> dict[str, Any]:
    """Threads count only before the baselines ran (torch.compile starts its own); the rest at both points."""
    return {
        "precision_changed": sorted(
            set(after_correctness["precision_changed"]) | set(after_timing["precision_changed"])
        ),
        "functions_replaced": sorted(
            set(after_correctness["functions_replaced"]) | set(after_timing["functions_replaced"])
        ),
        "new_threads": after_correctness["new_threads"],
    }
