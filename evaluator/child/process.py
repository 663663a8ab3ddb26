"""A sandboxed child's life: read the spec, set up its role, answer the harness's commands, end hard.

Commands arrive as JSON lines on the command pipe and each gets one reply on the result pipe (a few, such
as the candidate's streaming of an output, send several). The child ends with os._exit, so atexit hooks
and finalisers registered by candidate code never run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from evaluator.child.failures import StageFailure, TaskFailure, containment
from evaluator.sandbox.protocol import CommandReader, write_message

HARNESS_ERROR_EXIT = 70


def load_module(path: str, name: str):
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module


def error_message(error: BaseException) -> dict[str, Any]:
    """An exception no handler turned into a failure: a limit reached, the task's failure, the harness's."""
    contained = containment(error)
    if contained and contained[0] == "resource_limit":
        return {"event": "failure", "kind": "resource_limit", "message": contained[1]}
    if isinstance(error, TaskFailure):
        return {"event": "task_error", "message": str(error)}
    return {"event": "harness_error", "message": "".join(traceback.format_exception(error))[-4000:]}


def pipe_identity(fds: tuple[int, ...]) -> list[tuple[int, int]]:
    """Which open files these descriptors are (device and inode): a pipe put in another's place differs."""
    return [(status.st_dev, status.st_ino) for status in map(os.fstat, fds)]


class Child:
    """One role of a sandboxed child; subclasses define setup() and cmd_<name>(message) handlers."""

    def __init__(self, spec: dict[str, Any]):
        self.spec = spec
        self.device = spec["device"]
        self.workdir = Path(spec["workdir"])
        self.commands = CommandReader(spec["command_fd"])
        self.emit: Callable[[dict[str, Any]], None] = lambda message: write_message(
            spec["result_fd"], message
        )
        # The pipes to the harness as they are now, and copies of them: candidate code shares this process and
        # could put other pipes in their place (dup2) to speak for the harness's code; each request to the
        # harness first checks them, and a replaced pair is put back so the violation is heard.
        self.pipes = (spec["command_fd"], spec["result_fd"])
        self.pipe_ids = pipe_identity(self.pipes)
        self.pipe_copies = tuple(os.dup(fd) for fd in self.pipes)

    def setup(self) -> None:
        raise NotImplementedError

    def serve(self) -> None:
        """Set up, then answer commands until 'stop' (or the harness closes the pipe)."""
        self.setup()
        while True:
            message = self.commands.read()
            command = message.get("cmd")
            if command == "stop":
                return
            handler = getattr(self, f"cmd_{command}", None)
            if handler is None:
                self.emit({"event": "harness_error", "message": f"unknown command {command!r}"})
                continue
            try:
                reply = self.handle(command, handler, message)
            except StageFailure as failure:
                reply = {"event": "failure", "kind": failure.kind, "message": str(failure)}
            except Exception as error:  # noqa: BLE001 - reported; the harness decides what follows
                reply = self.unexpected(error)
            if reply is not None:
                self.emit(self.traced(reply))

    # The commands a role runs on the harness's timing core (the spec's timing_cpu, where it names one).
    PINNED: frozenset[str] = frozenset()

    def handle(self, command: str, handler, message: dict[str, Any]) -> dict[str, Any] | None:
        """One command's handler run, on the timing core where the role pins that command."""
        cpu = self.spec.get("timing_cpu")
        if command not in self.PINNED or cpu is None:
            return handler(message)
        from evaluator.child import timing  # torch: imported only by the roles that pin

        with timing.pinned(cpu):
            return handler(message)

    def pipes_intact(self) -> bool:
        try:
            return pipe_identity(self.pipes) == self.pipe_ids
        except OSError:
            return False

    def ask(self, event: str, reply: str) -> dict[str, Any]:
        """A request to the harness in the middle of a command, and its answer (a `reply` command)."""
        if not self.pipes_intact():
            for copy, fd in zip(self.pipe_copies, self.pipes, strict=True):
                os.dup2(copy, fd)
            raise StageFailure(
                "sandbox_violation", "the pipes to the harness were replaced in the kernel's process"
            )
        self.emit({"event": event})
        answer = self.commands.read()
        if answer.get("cmd") != reply:
            raise StageFailure(
                "harness_error", f"expected {reply!r} from the harness, got {answer.get('cmd')!r}"
            )
        return answer

    def make(self, seed: int) -> list[Any]:
        """One input set of the task's, from a seed."""
        raise NotImplementedError

    def drawn(self, seeds: Iterable[int]):
        return ((seed, self.make(seed)) for seed in seeds)

    def listed_or_asked(self, message: dict[str, Any], listed: str, counted: str) -> Iterable[int]:
        """A round's seeds as listed, or (hardened rounds) asked of the harness one call at a time, when that
        call's inputs are drawn: no later call's seed is in the kernel's process before its turn, so nothing
        there can prepare a later call's output (in a warm-up call, or anywhere else nothing is timed); the
        reference process asks alike, so the harness's clock spans each call on both sides."""
        if listed in message:
            return message[listed]
        return self.seeds_on_request(int(message.get(counted, 0)))

    def seeds_on_request(self, count: int):
        """count seeds, each asked of the harness when its call's inputs are drawn."""
        for _ in range(count):
            seed = self.ask("next_seed", "seed").get("seed")
            if not isinstance(seed, int):
                raise StageFailure("harness_error", f"a seed that is not an integer: {seed!r}")
            yield seed

    def traced(self, reply: dict[str, Any]) -> dict[str, Any]:
        """With tracing on (EVALUATOR_TRACE), the most GPU memory this process has reserved so far."""
        if self.spec.get("trace_memory") and self.device == "cuda":
            import torch

            reply["gpu_peak_mib"] = torch.cuda.max_memory_reserved() >> 20
        return reply

    def unexpected(self, error: BaseException) -> dict[str, Any]:
        """What an exception no handler expected means (the harness's own failure, by default)."""
        return error_message(error)


def role_class(role: str) -> type[Child]:
    if role == "reference":
        from evaluator.child.reference import Reference

        return Reference
    from evaluator.child.candidate import Candidate

    return Candidate


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    status = 0
    try:
        role_class(spec["role"])(spec).serve()
    except StageFailure as failure:
        write_message(spec["result_fd"], {"event": "failure", "kind": failure.kind, "message": str(failure)})
    except BaseException as error:  # noqa: BLE001 - anything else is reported, then the process ends hard
        write_message(spec["result_fd"], error_message(error))
        status = HARNESS_ERROR_EXIT
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
