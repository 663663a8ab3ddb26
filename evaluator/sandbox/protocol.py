"""Messages between the harness and a sandboxed child: JSON lines over pipes the harness creates."""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any

MAX_MESSAGE = 64 * 1024 * 1024


class ChildGone(Exception):
    """The child closed its end of the result pipe (it exited or crashed)."""


class Deadline(Exception):
    """No message arrived before the deadline."""


class MessageReader:
    """Reads newline-terminated JSON objects from a file descriptor, with a deadline."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = b""

    def waiting(self, timeout: float) -> bool:
        """Whether a message, or the end of the pipe, is there to read within timeout seconds (unread)."""
        if b"\n" in self.buffer:
            return True
        ready, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        return bool(ready)

    def read(self, deadline: float) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Deadline()
            ready, _, _ = select.select([self.fd], [], [], min(remaining, 1.0))
            if not ready:
                continue
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise ChildGone()
            self.buffer += chunk
            if len(self.buffer) > MAX_MESSAGE:
                raise ValueError("message from the child is too large")
        line, self.buffer = self.buffer.split(b"\n", 1)
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("message from the child is not a JSON object")
        return message


def write_message(fd: int, message: dict[str, Any]) -> None:
    """Write one JSON line, all of it, to fd."""
    data = (json.dumps(message, allow_nan=True) + "\n").encode("utf-8")
    while data:
        written = os.write(fd, data)
        data = data[written:]


class CommandReader:
    """Child side: blocking reads of the harness's command lines, buffered (several may arrive at once)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = b""

    def read(self) -> dict[str, Any]:
        """The next command; end of file (the harness closed its end) means stop."""
        while b"\n" not in self.buffer:
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return {"cmd": "stop"}
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        message = json.loads(line)
        return message if isinstance(message, dict) else {"cmd": "stop"}
