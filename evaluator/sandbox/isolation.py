"""Which sandbox layers this host allows, probed once, and the plan that confines one child with them.

Layers, strongest first, each probed by launching a real confined interpreter (so what is reported is
what works, not what is hoped for): network namespace; PID, IPC and mount namespaces with an init; a new
read-only root; an unprivileged user (when the worker is root); Landlock; cgroups. A layer that fails its
probe is left out and the reason is kept for the run's environment. `EVALUATOR_SANDBOX_DISABLE` (a comma
list of layer names) turns layers off for diagnosis; `EVALUATOR_SANDBOX_EXPOSE` (a colon list) adds
read-only paths to the sandbox's view.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import itertools
import json
import logging
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evaluator import HARNESS_VERSION
from evaluator.sandbox import cgroups, landlock, remembered
from evaluator.sandbox.boot import HARNESS_ROOT, child_command
from evaluator.sandbox.limits import default_limits

logger = logging.getLogger(__name__)

LAYERS = ("network", "pid", "root", "user", "landlock", "cgroup", "tmpfs")
UID_BASE = int(os.environ.get("EVALUATOR_SANDBOX_UID_BASE", "2100000000"))
UID_SPAN = 65536
NOBODY = 65534  # the fallback user where the dedicated range cannot be used (a user namespace's map)
EXTENSIONS_MOUNT = "/tmp/kb-extensions"
INDUCTOR_MOUNT = "/tmp/kb-inductor"
ONE_PASS_MOUNT = "/tmp/kb-one-pass"  # a copy of the one-pass kernel's Triton cache, in a candidate's process
ONE_PASS_FOLDER = "one-pass-triton"  # under the reference processes' cache: where they compile that kernel
SYSTEM_PATHS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sys")
DEVICE_NODES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
GPU_DEVICE_GLOBS = ("/dev/nvidia*", "/dev/nvidia-caps")
EXTRA_SYSTEM_PATHS = ("/run/nvidia-persistenced",)
PROBE_TIMEOUT_S = 60
CLONE_NEWNS = 0x00020000
PR_SET_DUMPABLE = 4
MS_REC, MS_PRIVATE = 1 << 14, 1 << 18
_uid_counter = itertools.count()
_state = {"private_mount_namespace": False}


@dataclass(frozen=True)
class Layers:
    """The layers a child gets on this host, and why the others are absent."""

    unshare: tuple[str, ...] = ()
    init: bool = False
    new_root: bool = False
    user: bool = False
    uid_base: int = UID_BASE
    uid_span: int = UID_SPAN
    landlock_abi: int = 0
    cgroups: tuple[cgroups.Hierarchy, ...] = ()
    absent: dict[str, str] = field(default_factory=dict)

    @property
    def temp_tmpfs(self) -> bool:
        return _state["private_mount_namespace"] and "tmpfs" not in disabled_layers()


@dataclass(frozen=True)
class Interpreter:
    """The child interpreter's own paths: where its standard library and packages live."""

    executable: str
    paths: tuple[str, ...]


def disabled_layers() -> set[str]:
    names = os.environ.get("EVALUATOR_SANDBOX_DISABLE", "").split(",")
    return {name.strip() for name in names if name.strip()}


def protect_process() -> None:
    """Make this process undumpable: a child of the same user can then read neither its memory (the
    expected outputs) nor its environment through /proc, whatever layers the host lacks."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def enter_private_mount_namespace() -> bool:
    """Give this (still single-threaded) harness process a mount namespace of its own, where root can.

    The per-child tmpfs temp dirs are mounted there: they vanish with the harness, however it ends.
    """
    if os.geteuid() != 0 or "tmpfs" in disabled_layers() or _state["private_mount_namespace"]:
        return _state["private_mount_namespace"]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        logger.info("no private mount namespace: %s", os.strerror(ctypes.get_errno()))
        return False
    if libc.mount(None, b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None) != 0:
        logger.warning("mount namespace not private: %s", os.strerror(ctypes.get_errno()))
        return False
    _state["private_mount_namespace"] = True
    return True


def mount_tmpfs(path: Path, size: int) -> bool:
    """Mount a size-limited tmpfs at path (in the harness's own mount namespace); False if it cannot."""
    libc = ctypes.CDLL(None, use_errno=True)
    options = f"size={size},mode=0755".encode()
    if libc.mount(b"tmpfs", str(path).encode(), b"tmpfs", ctypes.c_ulong(2 | 4), options) != 0:
        logger.warning("cannot mount a tmpfs on %s: %s", path, os.strerror(ctypes.get_errno()))
        return False
    return True


def unmount(path: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(str(path).encode(), 2) != 0:  # MNT_DETACH
        logger.warning("cannot unmount %s: %s", path, os.strerror(ctypes.get_errno()))


@functools.cache
def interpreter(python: str) -> Interpreter:
    """Ask the child interpreter where it lives (prefixes, site-packages, its sys.path)."""
    code = (
        "import json, sys, site\n"
        "paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]\n"
        "paths += site.getsitepackages() + [p for p in sys.path if p]\n"
        "print(json.dumps(paths))\n"
    )
    completed = subprocess.run(
        [python, "-I", "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return Interpreter(python, tuple(json.loads(completed.stdout.splitlines()[-1])))


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def visible_paths(python: str) -> tuple[list[str], dict[str, str]]:
    """Read-only paths of the sandbox's view and the symbolic links to recreate in it.

    System folders, the interpreter's prefixes and package folders, the harness's own package, CUDA and
    library paths from the environment, and EVALUATOR_SANDBOX_EXPOSE. Never the project root itself (its
    settings, database file and work folders), nor anything that contains it.
    """
    wanted = [*SYSTEM_PATHS, *EXTRA_SYSTEM_PATHS, str(HARNESS_ROOT / "evaluator"), *interpreter(python).paths]
    wanted += [os.path.dirname(os.path.realpath(python))]
    for name in ("CUDA_HOME", "CUDA_PATH"):
        wanted += [os.environ[name]] if os.environ.get(name) else []
    wanted += [part for part in os.environ.get("LD_LIBRARY_PATH", "").split(":") if part]
    wanted += [part for part in os.environ.get("EVALUATOR_SANDBOX_EXPOSE", "").split(":") if part]
    root = str(HARNESS_ROOT)
    links, real = {}, []
    for path in wanted:
        if not os.path.isabs(path) or not os.path.exists(path):
            continue
        resolved = os.path.realpath(path)
        if _within(root, resolved):
            continue  # the project root or one of its ancestors: never visible
        real.append(resolved)
        if os.path.islink(path):
            links[path] = resolved
    kept = sorted({path for path in real if not any(_within(path, o) and path != o for o in real)})
    links = {link: target for link, target in links.items() if not any(_within(link, p) for p in kept)}
    return kept, links


def device_nodes() -> list[str]:
    found = [path for path in DEVICE_NODES if os.path.exists(path)]
    for pattern in GPU_DEVICE_GLOBS:
        found += sorted(glob.glob(pattern))
    return found


def device_groups(nodes: list[str]) -> list[int]:
    """Groups that give access to a device the world may not open (e.g. GPUs owned by 'video')."""
    groups = set()
    for node in nodes:
        with contextlib.suppress(OSError):
            info = os.stat(node)
            if not info.st_mode & stat.S_IWOTH and info.st_mode & stat.S_IWGRP:
                groups.add(info.st_gid)
    return sorted(groups)


def pick_uid(layers: Layers) -> int:
    """A user id of the sandbox range for one candidate; children of one harness get different ones.

    The last id of the range is the reference processes' own (they share the worker's compile cache).
    """
    span = max(1, layers.uid_span - 1)
    return layers.uid_base + (os.getpid() * 257 + next(_uid_counter)) % span


def reference_uid(layers: Layers) -> int:
    return layers.uid_base + layers.uid_span - 1


def cache_is_private(layers: Layers) -> bool:
    """Whether a candidate can neither read nor write the reference processes' compile cache on this host.

    With a new root or Landlock the cache is outside every candidate's view; with separate users its mode
    (0700, the reference uid) keeps candidates out. Otherwise the reference processes compile into a fresh
    cache of their own every batch.
    """
    separate_users = layers.user and layers.uid_span > 1
    return bool(layers.new_root or layers.landlock_abi or separate_users)


@dataclass(frozen=True)
class Bind:
    """A writable folder of the host given to one child, at a fixed path inside a new root."""

    source: Path
    target: str


@dataclass
class Placement:
    """Where one child lives: its temp dir, the sandbox-writable folders in it and bound into it, its user."""

    workdir: Path
    scratch: Path
    binds: tuple[Bind, ...]
    uid: int | None

    def writable(self, new_root: bool) -> list[str]:
        """Paths the child may write, as it sees them."""
        return [str(self.scratch)] + [bind.target if new_root else str(bind.source) for bind in self.binds]


def child_plan(
    layers: Layers, python: str, place: Placement, rlimits: dict, tmp_bytes: int, cgroup_procs: list[str]
) -> dict[str, Any]:
    """The spec's 'sandbox' section: what evaluator.confine applies inside the child, in order."""
    plan: dict[str, Any] = {
        "cgroup_procs": cgroup_procs,
        "init": layers.init,
        "rlimits": rlimits,
        "chdir": str(place.scratch),
    }
    read, links = visible_paths(python)
    nodes = device_nodes()
    writable = place.writable(layers.new_root)
    if layers.new_root:
        plan["root"] = {
            "staging": str(place.workdir / ".root"),
            "read_only": [path for path in read if path != "/sys"],
            "sysfs": True,
            "links": links,
            "devices": nodes,
            "temp_dir": [str(place.workdir)],  # the harness's files: spec, inputs, task, kernel, log
            "writable": [str(place.scratch)],
            "binds": [[str(bind.source), bind.target] for bind in place.binds],
            "tmpfs": {"/dev": 1 << 20, "/dev/shm": tmp_bytes, "/tmp": tmp_bytes},
        }
        writable += ["/tmp", "/dev/shm"]
    if layers.landlock_abi:
        plan["landlock"] = {
            "abi": layers.landlock_abi,
            "read": [*read, *links, str(place.workdir)],
            "write": writable,
            "devices": ["/dev"] if layers.new_root else nodes,
        }
    if layers.user and place.uid is not None:
        plan["user"] = [place.uid, place.uid, device_groups(nodes)]
    return plan


def _probe(layers: Layers, python: str, cuda: bool = False) -> str | None:
    """Launch a confined interpreter with these layers (initialising CUDA in it when asked); None when it
    works, else why it does not. A probe cut off before it said why is tried once more."""
    problem = _probe_once(layers, python, cuda)
    if problem == CUT_OFF:
        problem = _probe_once(layers, python, cuda)
    return problem


CUT_OFF = "the probe's interpreter stopped before it printed its error"


def failure_reason(done: subprocess.CompletedProcess) -> str:
    """The last line of a failed probe's output: its error, or CUT_OFF when its traceback has no error."""
    lines = [line for line in (done.stderr or done.stdout).strip().splitlines() if line.strip()]
    if not lines:
        return f"exit status {done.returncode}"
    if lines[-1].startswith(("Traceback (most recent call last)", "  ")):
        return CUT_OFF
    return lines[-1][-300:]


def _probe_once(layers: Layers, python: str, cuda: bool) -> str | None:
    workdir = Path(tempfile.mkdtemp(prefix=temp_dir_prefix("probe")))
    group = None
    try:
        uid = layers.uid_base if layers.user else None
        place = Placement(workdir, workdir / "scratch", (), uid)
        prepare_folders(place, layers)
        procs = []
        if layers.cgroups:
            group = cgroups.ChildGroup(list(layers.cgroups), 1 << 30, 64)
            procs = group.create()
        limits = default_limits("cuda" if cuda else "cpu").rlimits()
        plan = child_plan(layers, python, place, limits, 64 << 20, procs)
        spec = {"probe": {"modules": ["torch"], "cuda": cuda}, "sandbox": plan}
        (workdir / "spec.json").write_text(json.dumps(spec))
        command = child_command(layers.unshare, python, workdir / "spec.json")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(place.scratch)}
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT_S,
                env=env,
                cwd=workdir,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as error:
            return f"{type(error).__name__}: {error}"
        return failure_reason(done) if done.returncode != 0 else None
    finally:
        if group is not None:
            group.destroy()
        shutil.rmtree(workdir, ignore_errors=True)


def prepare_folders(place: Placement, layers: Layers) -> None:
    """The temp dir readable by the sandbox user, its scratch and bound folders owned by it."""
    os.chmod(place.workdir, 0o755)
    for folder in (place.scratch, *(bind.source for bind in place.binds)):
        folder.mkdir(parents=True, exist_ok=True)
        if place.uid is not None and os.stat(folder).st_uid != place.uid:
            chown_tree(folder, place.uid)
        os.chmod(folder, 0o700)
    if layers.new_root:
        (place.workdir / ".root").mkdir(mode=0o700, exist_ok=True)


def chown_tree(folder: Path, uid: int) -> None:
    """Give a folder and everything in it to uid, never following a symbolic link."""
    os.chown(folder, uid, uid, follow_symlinks=False)
    for parent, folders, files in os.walk(folder):
        for name in folders + files:
            os.chown(os.path.join(parent, name), uid, uid, follow_symlinks=False)


@functools.cache
def detect(python: str) -> Layers:
    """The strongest set of layers whose probes pass on this host, for children run by this python (as
    found by an earlier harness of this boot, within the hour: evaluator.sandbox.remembered)."""
    found, reason = cgroups.detect()
    key = finding_key(python, found, reason)
    layers = remembered.decode(remembered.load(key), Layers)
    if layers is None or not cache_is_private(layers):  # only such a finding is ever written
        layers = probe_layers(python, found, reason)
        if cache_is_private(layers):  # else a candidate might reach the file
            remembered.save(key, remembered.encode(layers))
    else:
        logger.info("sandbox layers as found earlier on this boot (the probes are skipped)")
    if layers.cgroups:
        cgroups.reap_stale(list(layers.cgroups))
    reap_stale_temp_dirs()
    return layers


def finding_key(python: str, found: list[cgroups.Hierarchy], reason: str) -> dict[str, Any]:
    """Everything the layers found depend on."""
    executable = os.path.realpath(shutil.which(python) or python)
    with contextlib.suppress(OSError):
        executable += f"@{os.stat(executable).st_mtime_ns}"
    return {
        "harness": HARNESS_VERSION,
        "python": executable,
        "boot": remembered.boot_id(),
        "euid": os.geteuid(),
        "disabled": sorted(disabled_layers()),
        "landlock": landlock.abi_version(),
        "cgroups": [[h.controller, str(h.base), h.version] for h in found] or reason,
        "gpu": gpu_host(),
        "uid_base": UID_BASE,
        "unshare": shutil.which("unshare"),
    }


def probe_layers(python: str, found: list[cgroups.Hierarchy], reason: str) -> Layers:
    """Probe each layer in turn, strongest first, keeping those that work with the ones kept before."""
    off = disabled_layers()
    is_root = os.geteuid() == 0
    layers = Layers(absent={})
    unshare = shutil.which("unshare")

    def attempt(name: str, candidate: Layers) -> Layers:
        if name in off:
            layers.absent[name] = "disabled by EVALUATOR_SANDBOX_DISABLE"
            return layers
        problem = _probe(candidate, python)
        if problem is None:
            return candidate
        layers.absent[name] = problem
        logger.warning("sandbox layer %s is not available: %s", name, problem)
        return layers

    if not unshare:
        layers.absent.update({"network": "no unshare command", "pid": "no unshare command"})
    else:
        network = (unshare, "-n") if is_root else (unshare, "-r", "-n")
        layers = attempt("network", replace(layers, unshare=network))
        if layers.unshare:
            isolated = (*layers.unshare, "-m", "-p", "-i", "--fork", "--kill-child", "--mount-proc")
            layers = attempt("pid", replace(layers, unshare=isolated, init=True))
        else:
            layers.absent.setdefault("pid", "needs the network layer's unshare")
    if layers.init:
        layers = attempt("root", replace(layers, new_root=True))
    else:
        layers.absent.setdefault("root", "needs the mount namespace")
    if is_root:
        layers = attempt("user", replace(layers, user=True))
        if not layers.user and "user" not in off:  # e.g. a container whose uid map stops at 65535
            dedicated = layers.absent.pop("user")
            layers = attempt("user", replace(layers, user=True, uid_base=NOBODY, uid_span=1))
            if layers.user:
                layers.absent["dedicated user ids"] = f"{dedicated}; every child runs as uid {NOBODY}"
    else:
        layers.absent["user"] = "the worker is not root: the child runs as the worker's own user"
    abi = landlock.abi_version()
    if abi:
        layers = attempt("landlock", replace(layers, landlock_abi=abi))
    else:
        layers.absent["landlock"] = "the kernel has no Landlock (Linux >= 5.13 with landlock in lsm=)"
    if found:
        cgroups.reap_stale(found)  # before the probe places a child in them
        layers = attempt("cgroup", replace(layers, cgroups=tuple(found)))
    else:
        layers.absent["cgroup"] = reason
    if gpu_host():
        layers = keep_cuda_working(layers, python)
    return layers


def gpu_host() -> bool:
    return any(glob.glob(pattern) for pattern in GPU_DEVICE_GLOBS)


CUDA_SENSITIVE_LAYERS = ("cgroup", "landlock", "user", "root")
"""Layers that can stand between a child and the GPU driver, tried off one at a time in this order."""


def without(layers: Layers, name: str) -> Layers:
    off = {"cgroup": {"cgroups": ()}, "landlock": {"landlock_abi": 0}, "user": {"user": False},
           "root": {"new_root": False}}  # fmt: skip
    return replace(layers, **off[name])


def keep_cuda_working(layers: Layers, python: str) -> Layers:
    """On a GPU host, CUDA must initialise inside the sandbox: if the detected layers stop it (the driver
    needs files, devices or calls a layer denies), leave out the first single layer whose absence fixes it
    and say so."""
    problem = _probe(layers, python, cuda=True)
    if problem is None:
        return layers
    logger.warning("CUDA does not initialise inside the sandbox: %s", problem)
    for name in CUDA_SENSITIVE_LAYERS:
        candidate = without(layers, name)
        if candidate != layers and _probe(candidate, python, cuda=True) is None:
            candidate.absent[name] = f"left out: CUDA does not initialise with it on this host ({problem})"
            return candidate
    layers.absent["cuda"] = f"CUDA does not initialise inside the sandbox: {problem}"
    return layers


def temp_dir_prefix(kind: str = "eval") -> str:
    """kb-eval-<pid>-: the harness's pid in its temp dirs' names, so a later harness can clean up after it."""
    return f"kb-{kind}-{os.getpid()}-"


def reap_stale_temp_dirs() -> int:
    """Remove the temp dirs of harness processes that no longer run (SIGKILLed before cleaning up)."""
    removed = 0
    for folder in Path(tempfile.gettempdir()).glob("kb-*-*-*"):
        if folder.is_dir() and not folder.is_symlink() and not cgroups.owner_alive(folder.name):
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed
