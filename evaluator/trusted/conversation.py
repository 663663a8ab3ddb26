"""Talking to one sandboxed child: a request, the one reply it must bring, and what every other outcome means.

A timeout, a dead child, a malformed message or a failure the child reports becomes a Stop carrying the
verdict it means: for the candidate, the kernel's own error kind (timeout, crash, resource_limit, ...); for
the reference process, a resource_limit when the problem does not fit, else the harness's own error.
"""

from __future__ import annotations

from typing import Any

from evaluator.sandbox.process import ChildGone, ChildProcess, Deadline


class Stop(Exception):
    """The evaluation of this kernel ends here with this error kind and message."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


class Conversation:
    """Requests and replies with one child; `who` is 'kernel' (the candidate) or 'reference'."""

    def __init__(self, child: ChildProcess, who: str):
        self.child = child
        self.who = who

    def receive(self, timeout: float, stage: str) -> dict[str, Any]:
        try:
            message = self.child.receive(timeout)
        except Deadline:
            self.child.kill()
            if self.who == "reference":
                raise Stop(
                    "harness_error",
                    f"the reference process gave no answer within {timeout:.0f} s during {stage}",
                ) from None
            raise Stop(
                "timeout",
                f"no answer within {timeout:.0f} s during {stage} (the limit for this task); "
                "the process group was killed",
            ) from None
        except ChildGone:
            raise self.gone(stage) from None
        except ValueError as error:
            kind = "harness_error" if self.who == "reference" else "sandbox_violation"
            raise Stop(
                kind, f"unreadable message from the {self.who}'s sandbox during {stage}: {error}"
            ) from None
        return self.check(message, stage)

    def gone(self, stage: str) -> Stop:
        self.child.wait_exit()
        limit = self.child.limit_hit()
        if limit:
            return Stop("resource_limit", f"the {self.who}'s process was {limit} during {stage}")
        description = self.child.exit_description()
        if self.who == "reference" or stage == "startup":
            return Stop("harness_error", f"the {self.who}'s process ended during {stage} ({description})")
        return Stop("crash", f"the kernel's process ended during {stage} ({description})")

    def check(self, message: dict[str, Any], stage: str) -> dict[str, Any]:
        event = message.get("event")
        text = str(message.get("message", ""))[-6000:]
        if event == "failure":
            kind = str(message.get("kind", "runtime_error"))
            if self.who == "reference" and kind != "resource_limit":
                kind = "harness_error"
            raise Stop(kind, text if self.who == "kernel" else f"the reference failed during {stage}: {text}")
        if event == "harness_error":
            raise Stop("harness_error", text)
        if event == "task_error":
            raise Stop("harness_error", f"the task is broken: {text}")
        return message

    def expect(self, event: str, timeout: float, stage: str) -> dict[str, Any]:
        message = self.receive(timeout, stage)
        if message.get("event") != event:
            kind = "harness_error" if self.who == "reference" else "sandbox_violation"
            raise Stop(
                kind, f"unexpected message {message.get('event')!r} from the {self.who} during {stage}"
            )
        return message

    def request(self, message: dict[str, Any], event: str, timeout: float, stage: str) -> dict[str, Any]:
        self.child.send(message)
        return self.expect(event, timeout, stage)
