"""The candidate's process: import the kernel, run it on inputs drawn from the harness's seeds, time it.

Nothing here decides a verdict. Each output is fingerprinted the moment forward returns and then copied,
chunk by chunk, into the shared slots the reference process reads; the facts only this process can see
(exact type, device, aliasing, input mutation, the state the kernel left behind) go to the harness, which
checks them against what the reference process computed. Baselines never run here.
"""

from __future__ import annotations

import gc
import importlib
import time
from typing import Any

import torch

from evaluator.child import inputs, integrity, timing
from evaluator.child.channel import Slots, chunks
from evaluator.child.failures import StageFailure, TaskFailure, classify_exception
from evaluator.child.fingerprint import fingerprint, identical, input_prints, prepare_one_pass, warm_triton
from evaluator.child.flat import flat_range
from evaluator.child.process import Child, load_module
from evaluator.clock import StageClock
from evaluator.policy import TASK_MODULE, TimingPlan

POISON_MIN_BYTES = 64 * 1024 * 1024
# A trial's inputs are kept for the next one when they cost at most this much more than its output.
KEEP_INPUTS_HEADROOM_BYTES = 256 * 1024 * 1024


def layout(values: list[Any]) -> list[tuple]:
    """Shape, strides, offset and storage of each tensor: what a re-layout (`set_`, `as_strided_`) changes."""
    return [
        (tuple(v.shape), v.stride(), v.storage_offset(), v.untyped_storage().data_ptr())
        for v in values
        if isinstance(v, torch.Tensor)
    ]


def describe_output(output: Any, values: list[Any]) -> dict[str, Any]:
    """Exact type, layout, device, shape, dtype and whether the output shares storage with an input."""
    if type(output) is not torch.Tensor:
        return {"type": type(output).__qualname__, "exact_tensor": False}
    if output.layout != torch.strided:
        return {"type": f"torch.Tensor ({output.layout})", "exact_tensor": False}
    storage = output.untyped_storage().data_ptr()
    tensors = [value for value in values if isinstance(value, torch.Tensor)]
    return {
        "exact_tensor": True,
        "device": output.device.type,
        "shape": list(output.shape),
        "dtype": str(output.dtype).removeprefix("torch."),
        "aliases": bool(output.numel()) and any(v.untyped_storage().data_ptr() == storage for v in tensors),
    }


def into_storage(previous: list[Any], values: list[Any]) -> list[Any]:
    """values copied into the previous trial's tensors where shape, strides, dtype and device match.

    Every trial after the first then reads its inputs from the same addresses and tensor objects: a result
    memoised by input address or identity answers with the previous trial's output, whatever the allocator.
    """
    placed = []
    # Only tensors that own their memory alone, on both sides: inputs that share storage (a task passing one
    # tensor twice, or a view of another input) would else all receive the last copy made into it.
    owned = [a and b for a, b in zip(unshared(previous), unshared(values), strict=False)]
    for old, new, alone in zip(previous, values, owned, strict=False):
        if alone and same_layout(old, new):
            with torch.no_grad():
                old.copy_(new)
            new = old
        placed.append(new)
    return placed + values[len(placed) :]


def unshared(values: list[Any]) -> list[bool]:
    """Which values are tensors whose memory no other value of the list shares."""
    storages = [v.untyped_storage().data_ptr() if isinstance(v, torch.Tensor) else None for v in values]
    return [storage is not None and storages.count(storage) == 1 for storage in storages]


def same_layout(old: Any, new: Any) -> bool:
    return (
        type(old) is torch.Tensor
        and type(new) is torch.Tensor
        and old.shape == new.shape
        and old.stride() == new.stride()
        and (old.dtype, old.device) == (new.dtype, new.device)
        and old.storage_offset() == new.storage_offset() == 0
    )


def warm_up_dynamo() -> None:
    """torch._dynamo rebinds torch functions when first imported, and nn.Module.__init__ when it first
    compiles: for a kernel whose source may use it, do both before the snapshot (only its own changes show).
    """
    importlib.import_module("torch._dynamo")
    torch.compile(lambda x: x + 1, backend="eager")(torch.ones(1))


def snapshot_output(output: Any, copy_below: int) -> Any:
    """A copy of an output taken the moment forward returns, when it is small (a late write then cannot
    reach what is judged); a larger one is judged as it is, and must still hold what it held at return."""
    if type(output) is not torch.Tensor or output.layout != torch.strided:
        return output
    if output.numel() * output.element_size() > copy_below:
        return output
    return output.detach().clone()


class Candidate(Child):
    """Import, construct, run trials, stream outputs, time rounds; report facts."""

    # Every command that calls the kernel, on the timing core: the pin tells no timed call from a trial.
    PINNED = frozenset({"trial", "round", "probe"})

    def setup(self) -> None:
        integrity.watch_audit_hooks()
        integrity.settle_torch(self.device)
        self.mode = self.spec["mode"]
        self.plan = TimingPlan(**self.spec["timing"])
        self.check_inputs = bool(self.spec["check_inputs"])
        if self.spec.get("preimport"):
            warm_up_dynamo()
        elif self.device == "cuda":
            importlib.import_module(
                "torch._dynamo"
            )  # the profiler imports it, and it rebinds torch functions
        try:
            self.task = load_module(self.spec["task_path"], TASK_MODULE)
            # What the harness needs of the task, taken before candidate code runs: the candidate can reach
            # the module (sys.modules) but not these references; changes to the module are flagged.
            self.get_inputs = self.task.get_inputs
            self.get_init_inputs = self.task.get_init_inputs
            self.model_class = self.task.Model
        except Exception as error:  # noqa: BLE001
            raise TaskFailure(f"the task cannot be loaded: {error!r}") from error
        self.output = None
        self.output_seed = 0
        self.trial_inputs = None
        # the core every call of the kernel's runs on (trials, rounds, probe: none tells a timed call by it)
        self.timing_cpu: int | None = self.spec.get("timing_cpu")
        self.slots = None
        # Started ahead of its turn, the process records what its full checks compare now, while another
        # kernel runs (about half a second); its import then only brings the record up to date.
        self.boot_snapshot = None
        if self.device == "cuda" and self.spec["role"] != "build":
            warm_triton()  # before the snapshot at boot: it may import modules the snapshot then covers
        if self.spec.get("snapshot_at_boot"):
            self.boot_snapshot = integrity.Snapshot.take(integrity.task_namespaces(self.task, None))
        self.emit({"event": "ready"})

    def unexpected(self, error: BaseException) -> dict[str, Any]:
        """Once candidate code has run in this process, a failure of the harness's code here is the kernel's:
        it may have changed the interpreter (a mode left on the stack, a patched function)."""
        if getattr(self, "snapshot", None) is None:
            return super().unexpected(error)
        failure = classify_exception(error, self.device, "runtime_error")
        message = (
            f"the harness's code in the kernel's process failed after the kernel was imported: {failure}"
        )
        return {"event": "failure", "kind": failure.kind, "message": message}

    # Import -----------------------------------------------------------------------------------------------

    def cmd_import(self, message: dict[str, Any]) -> dict[str, Any]:
        """Initialise the device, snapshot the state, import and construct the candidate."""
        if self.spec["role"] == "build":
            started = time.monotonic()
            self.load_candidate()
            return {"event": "imported", "seconds": time.monotonic() - started}
        clock = StageClock()
        opened = clock.mark
        if self.device == "cuda":
            torch.ones(1, device="cuda").add_(1)
            torch.cuda.synchronize()
        inputs.bind_generators(self.device)  # before any candidate code: seeding calls nothing it can reach
        clock.lap("setup")  # the device's context
        if self.device == "cuda" and message.get("one_pass"):  # loaded before the snapshot
            prepare_one_pass(self.device)
            torch.cuda.synchronize()
        clock.lap("one_pass")
        self.reference = None
        if not self.plan.interleaved:  # KernelBench runs the task's Model first in the kernel's process
            arguments = inputs.init_inputs(self.get_init_inputs, self.device)
            self.reference = inputs.build_model(self.model_class, arguments, self.device)
        namespaces = integrity.task_namespaces(self.task, self.reference)
        booted, self.boot_snapshot = self.boot_snapshot, None
        self.snapshot = booted.refresh(namespaces) if booted else integrity.Snapshot.take(namespaces)
        clock.lap("snapshot")
        model_class = self.load_candidate()
        clock.lap("module")
        try:
            arguments = inputs.init_inputs(self.get_init_inputs, self.device)
            self.candidate = inputs.build_model(model_class, arguments, self.device)
            timing.synchronize(self.device)
        except BaseException as error:  # noqa: BLE001
            raise classify_exception(error, self.device, "init_error") from None
        clock.lap("model")
        # The L2 flush buffer lives as long as the process and is made before any trial's tensors, as in the
        # reference process: made at the first round, it would split a freed output-sized block.
        self.flusher = timing.L2Flusher(self.device, self.plan.l2_flush)
        if self.spec["slots_fd"] is not None:
            self.slots = Slots(
                self.spec["slots_fd"], self.spec["slot_bytes"], self.spec["slot_count"], pin=True
            )
        clock.lap("buffers")
        integrity_report = self.snapshot.full(operators=False)
        clock.lap("check")
        return {
            "event": "imported",
            "pinned": bool(self.slots and self.slots.pinned),
            "integrity": integrity_report,
            "stages": clock.laps,  # seconds
            "span": [opened, clock.mark],  # on the host's monotonic clock, which the harness reads too
        }

    def load_candidate(self) -> type:
        try:
            module = load_module(self.spec["kernel_path"], "kb_candidate")
        except BaseException as error:  # noqa: BLE001 - SystemExit from candidate code is a failure too
            raise classify_exception(error, self.device, "compile_error") from None
        model_class = getattr(module, "ModelNew", None)
        if not isinstance(model_class, type):
            raise StageFailure("missing_model_new", "the kernel file defines no class ModelNew")
        return model_class

    # Correctness ------------------------------------------------------------------------------------------

    def call(self, values: list[Any], seed: int) -> Any:
        inputs.seed_everything(seed)
        try:
            with timing.collector_off():  # as in a timed loop: nothing there tells a trial from a timed call
                output = self.candidate(*values)
            timing.synchronize(self.device)
        except BaseException as error:  # noqa: BLE001 - SystemExit from forward is the kernel's fault too
            raise classify_exception(error, self.device, "runtime_error") from None
        return output

    def poison(self, output_bytes: int) -> None:
        """Fill free allocator memory with NaN, so outputs built from stale memory cannot pass."""
        if self.device != "cuda" or not self.spec["poison"]:
            return
        torch.cuda.empty_cache()
        free, _ = torch.cuda.mem_get_info()
        size = min(max(POISON_MIN_BYTES, output_bytes + POISON_MIN_BYTES), free // 2)
        block = torch.empty(size // 4, dtype=torch.float32, device="cuda")
        block.fill_(float("nan"))
        torch.cuda.synchronize()
        del block  # the block stays in PyTorch's cache, full of NaN

    def cmd_trial(self, message: dict[str, Any]) -> dict[str, Any]:
        """Run one correctness trial; keep the output for streaming and report what this process sees."""
        self.output = None
        values = inputs.make_inputs(self.get_inputs, message["seed"], message["distribution"], self.device)
        kept_inputs, self.trial_inputs = self.trial_inputs, None
        if kept_inputs is not None and layout(kept_inputs[0]) == kept_inputs[1]:  # not re-laid out since
            values = into_storage(kept_inputs[0], values)
        del kept_inputs
        before = input_prints(values, message["input_seed"])
        shapes = layout(values)
        self.poison(message["output_bytes"])
        reference_output = None
        if message["order"] == "reference_first" and self.reference is not None:
            inputs.seed_everything(message["seed"])
            reference_output = self.reference(*values)  # kept alive during the candidate call
        output = self.call(values, message["seed"])
        with integrity.harness_reads():
            kept = snapshot_output(output, self.spec["slot_bytes"])
            at_return = fingerprint(kept, message["fingerprint_seed"])
            facts = self.facts(output, values, before, shapes, message["input_seed"])
        del reference_output
        self.output = kept if facts.get("exact_tensor") else None
        if inputs.tensor_bytes(values) <= message["output_bytes"] + KEEP_INPUTS_HEADROOM_BYTES:
            self.trial_inputs = values, layout(values)  # the next trial's inputs go into these tensors
        return {
            "event": "output",
            "facts": facts,
            "fingerprint": at_return,
            "input_fingerprints": before,
            "integrity": self.snapshot.quick(),
        }

    def facts(
        self, output: Any, values: list[Any], before: Any, shapes: list[tuple], seed: int
    ) -> dict[str, Any]:
        try:
            facts = describe_output(output, values)
        except Exception as error:  # noqa: BLE001 - meta, sparse or otherwise unreadable outputs
            raise StageFailure(
                "not_a_tensor", f"the output cannot be read as a dense tensor: {error}"
            ) from None
        facts["mutated"] = layout(values) != shapes or (
            before is not None and not all(map(identical, input_prints(values, seed), before))
        )
        return facts

    def cmd_send(self, message: dict[str, Any]) -> dict[str, Any]:
        """Copy the kept output into the slots, chunk by chunk, waiting for the harness to free a slot."""
        if self.output is None or self.slots is None:
            raise ValueError("no output to send")
        output = self.output.detach()
        free = list(range(self.slots.count))
        for offset, count in chunks(output.numel(), self.slots.elements(output.dtype)):
            while not free:
                reply = self.commands.read()
                if reply.get("cmd") != "free":
                    raise ValueError(f"expected a freed slot, got {reply.get('cmd')!r}")
                free.append(int(reply["slot"]))
            slot = free.pop(0)
            with integrity.harness_reads():
                self.slots.view(slot, count, output.dtype).copy_(flat_range(output, offset, offset + count))
            self.emit({"event": "chunk", "slot": slot, "offset": offset, "count": count})
        self.output = None
        return {"event": "sent"}

    def cmd_free(self, message: dict[str, Any]) -> None:
        """A slot freed after the last chunk of an output was sent: nothing waits for it."""
        return

    def cmd_discard(self, message: dict[str, Any]) -> dict[str, Any]:
        self.output = None
        return {"event": "discarded"}

    # Timing -----------------------------------------------------------------------------------------------

    def observe(self, output: Any, values: list[Any], state: Any) -> dict[str, Any]:
        before, shapes = state
        facts = self.facts(output, values, before, shapes, self.input_seed)
        if self.check_inputs and before is None:  # the harness compares them with the reference's, untouched
            facts["inputs"] = input_prints(values, self.input_seed)
        quick = self.snapshot.quick()
        if gc.isenabled():  # timing.Loop turns it off: back on, a finaliser could run as inputs are drawn
            quick["hooks"] = [*quick["hooks"], "gc: the collector turned back on inside a timed loop"]
        if not self.pipes_intact():
            quick["hooks"] = [*quick["hooks"], "the pipes to the harness replaced in this process"]
        if timing.left_timing_cpu(self.timing_cpu):
            moved = f"the timing thread moved off its core (CPU {self.timing_cpu})"
            quick["hooks"] = [*quick["hooks"], moved]
        facts["state"] = {key: value for key, value in quick.items() if value}
        return {
            key: value
            for key, value in facts.items()
            if key in ("exact_tensor", "aliases", "mutated", "inputs", "state")
        }

    def before(self, values: list[Any]) -> Any:
        """Before a timed call: the inputs' layout, and their fingerprints only where no reference process
        fingerprints the same inputs (no baseline is timed); else one pass over them, after the call, does."""
        own = self.check_inputs and not self.spec.get("baselines")
        return (input_prints(values, self.input_seed) if own else None), layout(values)

    def cmd_round(self, message: dict[str, Any]) -> dict[str, Any]:
        """Warm-up calls, then one timed call per seed (or calls on one fixed input set)."""
        self.input_seed = message["input_seed"]
        self.trial_inputs = None
        print_seed, ready = timing.round_sources(message, self.ask)
        loop = timing.Loop(
            self.device,
            self.plan.device_sync_before_end,
            self.flusher,
            print_seed,
            self.observe,
            self.before,
            ready,
        )
        try:
            warm = self.drawn(self.listed_or_asked(message, "warmup_seeds", "warmup_calls"))
            loop.run(self.candidate, warm, keep=False)
            self.emit({"event": "timing_loop", "phase": "start"})
            records = loop.run(self.candidate, self.feed(message))
            self.emit({"event": "timing_loop", "phase": "end"})
        except StageFailure:
            raise
        except BaseException as error:  # noqa: BLE001
            raise classify_exception(error, self.device, "runtime_error") from None
        checked = timing.now_ns()
        integrity_report = self.snapshot.full(operators=bool(message.get("operators")))
        loop.lap("check", checked)
        return {
            "event": "round",
            "records": [record.to_json() for record in records],
            "integrity": integrity_report,
            "phases_ms": loop.phases_ms(),
        }

    def make(self, seed: int) -> list[Any]:
        return inputs.make_inputs(self.get_inputs, seed, "task", self.device)

    def feed(self, message: dict[str, Any]):
        if message.get("fixed_seed") is not None:
            values = self.make(message["fixed_seed"])
            return ((message["fixed_seed"], values) for _ in range(message["calls"]))
        return self.drawn(self.listed_or_asked(message, "seeds", "calls"))

    def cmd_probe(self, message: dict[str, Any]) -> dict[str, Any]:
        """The deferred-work probe and, on a GPU, the kernels one call launches."""
        self.trial_inputs = None
        values = self.make(message["seed"])
        try:
            self.poison(message["output_bytes"])
            probe = timing.deferred_work_probe(
                self.candidate, values, self.device, message["fingerprint_seed"]
            )
            kernels = (
                timing.profile_kernels(self.candidate, values, self.workdir)
                if self.device == "cuda"
                else None
            )
        except BaseException as error:  # noqa: BLE001
            raise classify_exception(error, self.device, "runtime_error") from None
        return {
            "event": "probe",
            "deferred_probe": probe,
            "kernels": kernels,
            "integrity": self.snapshot.full(operators=True),
        }

    def cmd_check(self, message: dict[str, Any]) -> dict[str, Any]:
        operators = bool(message.get("operators"))
        return {"event": "integrity", "integrity": self.snapshot.full(operators=operators)}

    def cmd_memory(self, message: dict[str, Any]) -> dict[str, Any]:
        return {"event": "memory", **timing.peak_memory(self.device)}
