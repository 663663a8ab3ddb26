"""Landlock (Linux ≥ 5.13) through raw system calls: limit what a process may read, write, run and reach.

Standard library only: the sandboxed child applies it before anything else is imported. A ruleset lists
the directories a process keeps (read, or read and write); everything else on the file system is denied,
and, where the kernel's ABI allows, every TCP bind and connect, abstract UNIX sockets and signals to
processes outside the sandbox. Restrictions only ever add up and are inherited by every descendant.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # the same number on every architecture
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = READ_FILE | READ_DIR | EXECUTE
MAKE = MAKE_DIR | MAKE_REG | MAKE_SYM | MAKE_FIFO | MAKE_SOCK
WRITE = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE | REFER | TRUNCATE
DEVICES = READ_FILE | READ_DIR | WRITE_FILE | IOCTL_DEV  # /dev: use devices (GPUs), create nothing
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the only rights a file rule may hold


class LandlockError(OSError):
    """The kernel refused a Landlock call."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The kernel's Landlock ABI (1, 2, …), or 0 where Landlock is absent or disabled."""
    try:
        version = _libc().syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def fs_rights(abi: int) -> int:
    """Every file-system right the ABI knows (so that none is left unhandled, hence allowed)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


@dataclass
class Ruleset:
    """Directories a process keeps, with their rights; TCP and scopes handled where the ABI allows."""

    abi: int
    paths: list[tuple[str, int]] = field(default_factory=list)

    def allow(self, path: str, rights: int) -> None:
        self.paths.append((path, rights))

    def enforce(self) -> list[str]:
        """Restrict the calling thread and its future children; return the paths that do not exist."""
        handled = fs_rights(self.abi)
        attr = _RulesetAttr(
            handled,
            NET_BIND_TCP | NET_CONNECT_TCP if self.abi >= 4 else 0,
            SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if self.abi >= 6 else 0,
        )
        size = 8 if self.abi < 4 else 16 if self.abi < 6 else 24
        libc = _libc()
        ruleset_fd = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
        if ruleset_fd < 0:
            raise LandlockError(ctypes.get_errno(), "landlock_create_ruleset failed")
        missing = []
        try:
            for path, rights in self.paths:
                if not self._add_path(libc, ruleset_fd, path, rights & handled):
                    missing.append(path)
            if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise LandlockError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
            if libc.syscall(SYS_RESTRICT_SELF, ruleset_fd, 0) != 0:
                raise LandlockError(ctypes.get_errno(), "landlock_restrict_self failed")
        finally:
            os.close(ruleset_fd)
        return missing

    @staticmethod
    def _add_path(libc, ruleset_fd: int, path: str, rights: int) -> bool:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            if not os.path.isdir(path):
                rights &= FILE_RIGHTS
            rule = _PathBeneathAttr(rights, fd)
            if libc.syscall(SYS_ADD_RULE, ruleset_fd, RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
                raise LandlockError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
        finally:
            os.close(fd)
        return True
