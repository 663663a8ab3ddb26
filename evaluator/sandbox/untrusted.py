"""Reading what a sandboxed child wrote, without letting it choose what the harness opens.

The child owns its scratch folder and could put a symbolic link (to a root-only file), a FIFO (to hang
the harness) or a huge sparse file where the harness expects its outputs. Files are opened without
following links and without blocking, must be regular and within a size bound; tree copies take regular
files and folders only.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
from pathlib import Path


class UntrustedFileError(OSError):
    """A file the sandbox wrote is not what the harness expects (a link, a FIFO, too large, missing)."""


def open_regular(path: Path, max_bytes: int) -> io.BufferedReader:
    """Open a regular file for reading, refusing links, devices, FIFOs and files over max_bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise UntrustedFileError(error.errno, f"{path.name}: {error.strerror}") from error
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UntrustedFileError(0, f"{path.name} is not a regular file")
    if info.st_size > max_bytes:
        os.close(fd)
        raise UntrustedFileError(0, f"{path.name} is {info.st_size} bytes, more than the {max_bytes} allowed")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def copy_tree(source: Path, target: Path, max_bytes: int) -> int:
    """Copy regular files and folders (modes and times kept, links and the rest skipped); return bytes."""
    total = 0
    target.mkdir(parents=True, exist_ok=True)
    with os.scandir(source) as entries:
        for entry in entries:
            total += _copy_entry(entry, target / entry.name, max_bytes - total)
            if total > max_bytes:
                raise UntrustedFileError(0, f"more than {max_bytes} bytes under {source}")
    info = os.stat(source, follow_symlinks=False)
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    return total


def _copy_entry(entry: os.DirEntry, destination: Path, budget: int) -> int:
    """Copy one folder (recursively) or regular file; skip the rest. Return the bytes copied."""
    if entry.is_dir(follow_symlinks=False):
        return copy_tree(Path(entry.path), destination, budget)
    if not entry.is_file(follow_symlinks=False):
        return 0
    with open_regular(Path(entry.path), budget) as reader:
        info = os.fstat(reader.fileno())
        with open(destination, "wb") as writer:
            shutil.copyfileobj(reader, writer)
    os.chmod(destination, stat.S_IMODE(info.st_mode) & 0o755)
    os.utime(destination, ns=(info.st_atime_ns, info.st_mtime_ns))
    return info.st_size
