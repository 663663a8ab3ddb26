"""The sandbox layers a harness found on this host, kept for the next harnesses of the same boot.

Probing the layers launches a dozen confined interpreters (about 20 s on a GPU host, where CUDA is probed
too); a worker runs one harness per batch. The finding is written under the worker's cache folder, keyed
by everything it depends on (the harness's version, the child's interpreter, the boot, the user, the layers
turned off, Landlock's ABI, the cgroups this process sits in, whether the host has a GPU), and trusted for
`EVALUATOR_SANDBOX_RECHECK_S` seconds (an hour by default; 0 probes every time). Only a finding that keeps
candidates out of that folder is written, and a file is read only if this user alone can write it and its
folder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

from evaluator.sandbox import cgroups

logger = logging.getLogger(__name__)
FOLDER = "sandbox-layers"


def cache_root() -> Path:
    """The worker's cache folder: builds, baselines and this finding (EVALUATOR_CACHE_DIR to move it)."""
    root = os.environ.get("EVALUATOR_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "kb-evaluator"
    )
    return Path(root)


def recheck_seconds() -> float:
    try:
        return float(os.environ.get("EVALUATOR_SANDBOX_RECHECK_S", "3600"))
    except ValueError:
        return 0.0


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def file_for(key: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return cache_root() / FOLDER / f"{digest}.json"


def only_mine(path: Path) -> bool:
    """Owned by this user and writable by no one else (the file, and the folders it hangs from)."""
    try:
        for item in (path, path.parent, path.parent.parent):
            info = os.lstat(item)
            if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return False
            if item == path and not stat.S_ISREG(info.st_mode):
                return False
    except OSError:
        return False
    return True


def load(key: dict[str, Any]) -> dict[str, Any] | None:
    """The finding stored under this key, if it is recent enough and safe to trust; else None."""
    limit = recheck_seconds()
    path = file_for(key)
    if limit <= 0 or not path.exists() or not only_mine(path):
        return None
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    fresh = 0 <= time.time() - float(stored.get("found_at", 0)) < limit
    if not fresh or stored.get("key") != key:
        return None
    return stored.get("layers")


def save(key: dict[str, Any], layers: dict[str, Any]) -> None:
    """Store a finding (this user only); a folder that cannot be written is not an error."""
    if recheck_seconds() <= 0:
        return
    path = file_for(key)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=".layers.", suffix=".tmp")
        with os.fdopen(handle, "w") as stream:
            json.dump({"key": key, "found_at": time.time(), "layers": layers}, stream)
        os.replace(temp, path)
    except OSError as error:
        logger.info("the sandbox layers found are not kept: %s", error)


def encode(layers: Any) -> dict[str, Any]:
    """A Layers (evaluator.sandbox.isolation) as JSON values."""
    values = {item.name: getattr(layers, item.name) for item in dataclasses.fields(layers)}
    values["unshare"] = list(values["unshare"])
    values["cgroups"] = [[h.controller, str(h.base), h.version] for h in values["cgroups"]]
    return values


def decode(stored: dict[str, Any] | None, kind: type) -> Any:
    """The Layers (of class `kind`) that encode wrote; None for nothing or anything malformed."""
    if not stored:
        return None
    try:
        hierarchies = tuple(
            cgroups.Hierarchy(str(name), Path(base), int(version))
            for name, base, version in stored["cgroups"]
        )
        return kind(
            unshare=tuple(str(part) for part in stored["unshare"]),
            init=bool(stored["init"]),
            new_root=bool(stored["new_root"]),
            user=bool(stored["user"]),
            uid_base=int(stored["uid_base"]),
            uid_span=int(stored["uid_span"]),
            landlock_abi=int(stored["landlock_abi"]),
            cgroups=hierarchies,
            absent={str(name): str(why) for name, why in stored["absent"].items()},
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
