"""Inside a child: turning an exception into the result's error kind and a message whose first line says it.

The first line names the error and where in the kernel it happened ("SyntaxError: invalid syntax (kernel
line 3)"), without a path; the traceback follows for the owner's log.
"""

from __future__ import annotations

import errno
import re
import traceback

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
# What the sandbox answers to a forbidden access (file system, network, signals, mounts) ...
SANDBOX_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENETUNREACH, errno.EAFNOSUPPORT}
# ... and what a limit answers once reached (temp dir or file size, descriptors, processes).
OUT_OF_MEMORY = re.compile(r"can't allocate memory|Cannot allocate memory|out of memory", re.IGNORECASE)
RESOURCE_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EMFILE, errno.ENFILE, errno.EAGAIN}
KERNEL_FILE = "kernel.py"
MESSAGE_LIMIT = 6000


class StageFailure(Exception):
    """A failure of the candidate at a stage, with the result's error kind."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class TaskFailure(Exception):
    """The task itself fails (not any kernel's fault)."""


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


def kernel_line(error: BaseException) -> int | None:
    """The line of the kernel file where the error was raised (the deepest frame in it), if any."""
    if isinstance(error, SyntaxError) and str(error.filename or "").endswith(KERNEL_FILE):
        return error.lineno
    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename.endswith(KERNEL_FILE):
            line = frame.lineno
    return line


def first_line(error: BaseException) -> str:
    """'Kind: message (kernel line N)', one line, no path."""
    message = error.msg if isinstance(error, SyntaxError) else str(error)
    text = " ".join(message.split())[:300]
    text = re.sub(r"(/[\w.+-]+)+/", "", text)  # paths inside the message keep only their last part
    line = kernel_line(error)
    where = f" (kernel line {line})" if line else ""
    return f"{type(error).__name__}: {text}{where}" if text else f"{type(error).__name__}{where}"


def classify_exception(error: BaseException, device: str, default: str) -> StageFailure:
    text = f"{type(error).__name__}: {error}"
    if device == "cpu" and any(marker in text for marker in NEEDS_GPU_MARKERS):
        return StageFailure("needs_gpu", f"this kernel needs a CUDA GPU; on a CPU host it fails with {text}")
    details = "".join(traceback.format_exception(error))[-MESSAGE_LIMIT:]
    contained = containment(error)
    if contained:
        kind, reason = contained
        return StageFailure(kind, f"{reason}\n{details[-(5000 - min(len(reason), 1000)) :]}")
    return StageFailure(default, f"{first_line(error)}\n{details}")
