"""The reference process: the task's Model alone, in its own sandbox; it never imports candidate code.

It computes every expected output (one trial at a time, from the seed the harness names), judges each
candidate output the harness relays to it chunk by chunk, times the eager and torch.compile baselines in
rounds interleaved with the candidate's, and fingerprints every baseline output: the trusted values the
candidate's timed calls are checked against. One reference process serves every kernel of a task in a batch;
its torch.compile cache is the worker's own and persists across batches.
"""

from __future__ import annotations

import importlib
import os
import time
from typing import Any

import torch

from evaluator.checks import ONE_PASS_BYTES, ONE_PASS_CACHE_VARIABLE, identical, matches, one_pass_pays
from evaluator.child import compare, inputs, integrity, timing
from evaluator.child.channel import Slots, receive_slots
from evaluator.child.failures import TaskFailure
from evaluator.child.fingerprint import fingerprint, input_prints, prepare_one_pass
from evaluator.child.process import Child, load_module
from evaluator.policy import TASK_MODULE, TimingPlan

DESCRIBE_PRINT_SEED = 3  # the inputs' fingerprints when a task's get_inputs() is drawn twice


def inputs_evidence(values: list[Any]) -> tuple[list, list[str]]:
    """What says whether two draws of a task's inputs agree: the tensors' fingerprints, the rest's repr."""
    others = [repr(value) for value in values if not isinstance(value, torch.Tensor)]
    return input_prints(values, DESCRIBE_PRINT_SEED), others


class Reference(Child):
    """The task's Model, its compiled twin, the current trial's expected output and its comparison."""

    # The baselines' rounds (and the calibration's) on the timing core the kernel's calls use.
    PINNED = frozenset({"round"})

    def setup(self) -> None:
        integrity.settle_torch(self.device)
        self.plan = TimingPlan(**self.spec["timing"])
        self.tolerance = float(self.spec["tolerance"])
        try:
            self.task = load_module(self.spec["task_path"], TASK_MODULE)
        except Exception as error:  # noqa: BLE001 - a broken task is reported as such
            raise TaskFailure(f"the task cannot be loaded: {error!r}") from error
        self.model = None  # built on the first command: nothing touches the device before its turn
        self.compiled = None
        self.expectation: compare.Expectation | None = None
        self.comparison: compare.Comparison | None = None
        self.constant: float | None = None
        self.slots: Slots | None = None
        self.flusher = None
        self.snapshot: integrity.Snapshot | None = None  # mirrors the kernel process's per-call check
        if "compile" in self.spec.get("baselines", ()):
            # torch.compile's compiler, imported now (a second or more) rather than at the baseline's turn:
            # a reference process started ahead of its task's turn does this while another kernel runs
            importlib.import_module("torch._inductor.compile_fx")
        self.emit({"event": "ready"})

    def build(self) -> None:
        """The task's Model on the device (KernelBench's construction) and the L2 flush buffer."""
        if self.model is not None:
            return
        inputs.bind_generators(self.device)
        try:
            arguments = inputs.init_inputs(self.task.get_init_inputs, self.device)
            self.model = inputs.build_model(self.task.Model, arguments, self.device)
        except Exception as error:  # noqa: BLE001
            raise TaskFailure(f"the task's Model cannot be built: {error!r}") from error
        self.flusher = timing.L2Flusher(self.device, self.plan.l2_flush)

    def make(self, seed: int, distribution: str = "task") -> list[Any]:
        return inputs.make_inputs(self.task.get_inputs, seed, distribution, self.device)

    def forward(self, values: list[Any], seed: int) -> torch.Tensor:
        inputs.seed_everything(seed)
        try:
            output = self.model(*values)
        except Exception as error:  # noqa: BLE001
            raise TaskFailure(f"the task's reference fails on its own inputs: {error!r}") from error
        if type(output) is not torch.Tensor:
            raise TaskFailure(f"the task's Model returns {type(output).__name__}, not one tensor")
        return output.detach()

    def release(self) -> None:
        self.expectation = self.comparison = None
        if self.device == "cuda":
            torch.cuda.empty_cache()

    # Commands ---------------------------------------------------------------------------------------------

    def cmd_describe(self, message: dict[str, Any]) -> dict[str, Any]:
        """One input set and the output: bytes, shape, dtype, and whether the reference uses the RNG."""
        self.build()
        values = self.make(message["seed"])
        base = forward_peak_start(self.device)
        first = self.forward(values, 1)
        shape, dtype, size = list(first.shape), first.dtype, first.numel() * first.element_size()
        scratch = forward_scratch_bytes(self.device, base, size)
        one_pass = one_pass_pays(
            inputs.tensor_bytes(values), size, message.get("one_pass_bytes", ONE_PASS_BYTES)
        ) and prepare_one_pass(  # reported: the candidate's process does the same at its import
            self.device, os.environ.get(ONE_PASS_CACHE_VARIABLE)
        )
        printed, numel = fingerprint(first, 1), first.numel()
        del first  # one output at a time: the second call is compared by fingerprint
        timing.synchronize(self.device)
        started = time.perf_counter()
        second = self.forward(values, 2)
        timing.synchronize(self.device)
        seconds = time.perf_counter() - started
        stochastic = not matches(fingerprint(second, 1), printed, numel, self.tolerance)
        reply = {
            "event": "described",
            "input_bytes": inputs.tensor_bytes(values),
            "output_bytes": size,
            "shape": shape,
            "dtype": str(dtype).removeprefix("torch."),
            "stochastic": stochastic,
            "forward_ms": seconds * 1e3,
            "parameter_bytes": parameter_bytes(self.model),
            "scratch_bytes": scratch,
            "one_pass": one_pass,
        }
        drawn = inputs_evidence(values)
        del values, second
        self.release()
        self.same_inputs_again(message["seed"], drawn)
        return reply

    def same_inputs_again(self, seed: int, drawn: tuple[list, list[str]]) -> None:
        """get_inputs() under the same seed once more: each process draws its own inputs from the harness's
        seeds, so a task drawing them from another generator (numpy's, Python's random) cannot be judged."""
        again = inputs_evidence(self.make(seed))
        self.release()
        prints, others = drawn
        if again[1] != others or len(again[0]) != len(prints) or not all(map(identical, again[0], prints)):
            raise TaskFailure(
                "the task's get_inputs() draws different inputs under the same torch seed (a generator "
                "other than torch's, such as numpy's or Python's random?): every process of the harness "
                "draws its own inputs from the same seeds, so they must be reproducible"
            )

    def cmd_expect(self, message: dict[str, Any]) -> dict[str, Any]:
        """Compute one trial's expected output and keep it (with its inputs) until the verdict."""
        self.release()
        values = self.make(message["seed"], message["distribution"])
        tensors = [v for v in values if isinstance(v, torch.Tensor)]
        # before the task's own forward, which may change its inputs in place (the kernel is given them new)
        untouched = [fingerprint(v, message["input_seed"]) for v in tensors]
        try:
            expected = self.forward(values, message["seed"])
        except TaskFailure as failure:
            if message["distribution"] == "task":
                raise
            raise TaskFailure(
                f"the task's reference fails on {message['distribution']} inputs, which hardened mode's "
                f"extra trials draw in place of get_inputs()' floats ({failure}); a task that accepts only "
                "its own input range can be evaluated in kernelbench mode"
            ) from failure
        kernelbench_trial = message["distribution"] == "task"
        if kernelbench_trial and self.constant is None and expected.is_floating_point():
            self.constant = compare.mean(expected)
        first_input = tensors[0] if tensors and tensors[0].shape == expected.shape else None
        self.expectation = compare.Expectation(
            expected, message["distribution"], self.tolerance, self.constant, first_input
        )
        finite = compare.all_finite(expected) if expected.is_floating_point() else True
        reply = {
            "event": "expected",
            "shape": list(expected.shape),
            "dtype": str(expected.dtype).removeprefix("torch."),
            "finite": finite,
            "input_fingerprints": untouched,
        }
        if kernelbench_trial and expected.is_floating_point():
            reply["canaries"] = compare.canary_verdicts(self.expectation)
            reply["equal_canaries"] = [n for n in reply["canaries"] if compare.equal_to(self.expectation, n)]
        if not tensors or first_input is None:
            self.expectation.first_input = None
        return reply

    def cmd_slots(self, message: dict[str, Any]) -> dict[str, Any]:
        """Take the next kernel's memory file of output slots (and let go of the last one)."""
        if self.slots is not None:
            self.slots.close()
        self.slots = receive_slots(self.spec["fds_fd"], message["slot_bytes"], message["slot_count"])
        return {"event": "slots", "pinned": self.slots.pinned}

    def cmd_compare(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.expectation is None:
            raise ValueError("no expected output to compare with")
        self.comparison = compare.Comparison(
            self.expectation, message["fingerprint_seed"], bool(message.get("canaries"))
        )
        return {"event": "comparing"}

    def cmd_chunk(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.comparison is None:
            raise ValueError("a chunk before the comparison began")
        expected = self.expectation.expected
        view = self.slots.view(message["slot"], message["count"], expected.dtype)
        self.comparison.update(view.to(expected.device), message["offset"])
        return {"event": "chunk_done", "slot": message["slot"]}

    def cmd_verdict(self, message: dict[str, Any]) -> dict[str, Any]:
        verdict = self.comparison.verdict() if self.comparison else {"complete": False}
        self.release()
        return {"event": "verdict", **verdict}

    def cmd_drop(self, message: dict[str, Any]) -> dict[str, Any]:
        self.release()
        return {"event": "dropped"}

    def cmd_compile(self, message: dict[str, Any]) -> dict[str, Any]:
        """Build the torch.compile baseline and run it once (the worker's inductor cache makes this fast)."""
        started = time.perf_counter()
        if self.compiled is None:
            self.compiled = torch.compile(self.model)
            values = self.make(message["seed"])
            inputs.seed_everything(message["seed"])
            self.compiled(*values)
            timing.synchronize(self.device)
            del values
            self.release()
        return {"event": "compiled", "seconds": time.perf_counter() - started}

    def cmd_round(self, message: dict[str, Any]) -> dict[str, Any]:
        """Time the named baselines on the round's seeds (fresh inputs per call, or one fixed set)."""
        seed = message.get("input_seed", 0)
        checked = bool(self.spec.get("check_inputs"))
        print_seed, ready = timing.round_sources(message, self.ask)
        if ready is not None and self.snapshot is None:
            self.snapshot = integrity.Snapshot.for_calls()

        def observe(output: Any, values: list[Any], untouched: Any) -> dict[str, Any]:
            if ready is not None:  # the per-call state check the kernel's process makes: cycles compare
                self.snapshot.quick()
            return {"inputs": untouched} if checked else {}

        loop = timing.Loop(
            self.device,
            self.plan.device_sync_before_end,
            self.flusher,
            print_seed,
            observe=observe,
            before=lambda values: input_prints(values, seed) if checked else None,
            ready=ready,
        )  # one pass over the inputs per call, as in the candidate's loop: the two loops' overheads compare
        variants = {"eager": self.model, "compile": self.compiled}
        names = list(message["variants"])
        for name in names:
            if variants.get(name) is None:
                raise ValueError(f"no {name} baseline (compile it first)")
            warm = self.drawn(self.listed_or_asked(message, "warmup_seeds", "warmup_calls"))
            loop.run(variants[name], warm, keep=False)
        records: dict[str, list] = {}
        self.announce("start")
        for name in names:
            timed = loop.run(variants[name], self.feed(message))
            written = timing.now_ns()
            records[name] = [record.to_json() for record in timed]
            loop.lap("records", written)
        self.announce("end")
        # The allocator's blocks stay cached to the next round, as the candidate's do: emptied here, every
        # round's first call paid for new device memory (on the baseline's side alone: up to 5x a call).
        # The task was admitted with both processes at their peak at once, so holding them fits.
        return {"event": "round", "records": records, "phases_ms": loop.phases_ms()}

    def feed(self, message: dict[str, Any]):
        """(seed, inputs) per call: a new set per seed, or the fixed seed's set every call."""
        if message.get("fixed_seed") is not None:
            values = self.make(message["fixed_seed"])
            return ((message["fixed_seed"], values) for _ in range(message["calls"]))
        return self.drawn(self.listed_or_asked(message, "seeds", "calls"))

    def cmd_streams(self, message: dict[str, Any]) -> dict[str, Any]:
        """The CUDA streams the task's own forward runs kernels on (cuDNN may add its own), from a profile."""
        streams = 1
        if self.device == "cuda":
            values = self.make(message["seed"])
            streams = timing.profile_kernels(self.model, values, self.workdir)["streams"]
            del values
            self.release()
        return {"event": "streams", "streams": streams}

    def cmd_memory(self, message: dict[str, Any]) -> dict[str, Any]:
        return {"event": "memory", **timing.peak_memory(self.device)}

    def announce(self, phase: str) -> None:
        self.emit({"event": "timing_loop", "phase": phase})


def forward_peak_start(device: str) -> int:
    """Before a forward: the device memory already allocated, with the peak counter reset to it."""
    if device != "cuda":
        return 0
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    return torch.cuda.memory_allocated()


def forward_scratch_bytes(device: str, base: int, output_bytes: int) -> int:
    """What a forward needed beyond its inputs, weights and output (intermediates; 0 where unmeasured)."""
    if device != "cuda":
        return 0
    torch.cuda.synchronize()
    return max(0, torch.cuda.max_memory_allocated() - base - output_bytes)


def parameter_bytes(model: torch.nn.Module) -> int:
    tensors = list(model.parameters()) + list(model.buffers())
    return sum(t.numel() * t.element_size() for t in tensors)
