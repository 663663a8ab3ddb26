"""Inside the sandbox, before anything else runs: apply the harness's plan, layer by layer.

Standard library only, run as the first thing of a fresh interpreter that `unshare` started in new
network, mount, PID and IPC namespaces (as far as the host allows; `evaluator.isolation` decides). In order:
join the child's cgroups; build a new root holding only read-only binds of what Python, torch and the
compilers need, a private /tmp and /dev/shm and the child's own temp dir, and pivot into it; fork, so that
a small init is PID 1 of the namespace (its death kills every process left in it) and the candidate runs
as PID 2; set the rlimits; apply Landlock; drop to an unprivileged user. Anything that fails raises: a
child that cannot be confined as planned never runs candidate code.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import resource
import sys

from evaluator.sandbox import landlock

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 1 << 14, 1 << 18, 1 << 21, 1 << 24
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
SIGKILL = 9
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203}
OPTION_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}
DEVICE_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
}


class ConfinementError(OSError):
    """A layer of the plan could not be applied."""


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise ConfinementError(errno, f"{what}: {os.strerror(errno)}")


def _bytes(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    result = _libc.mount(_bytes(source), _bytes(target), _bytes(fstype), ctypes.c_ulong(flags), _bytes(data))
    _check(result, f"mount {source} on {target}")


def confine(spec_path: str) -> str:
    """Apply the spec's sandbox plan to this process; return 'probe' for a probe spec, else 'run'."""
    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    plan = spec.get("sandbox") or {}
    for procs in plan.get("cgroup_procs", []):
        with open(procs, "w", encoding="ascii") as handle:
            handle.write("0")  # this process; its descendants follow it into the group
    if plan.get("root"):
        build_root(plan["root"])
    keep_fds = [
        spec[name] for name in ("result_fd", "command_fd", "slots_fd", "fds_fd") if spec.get(name) is not None
    ]
    if plan.get("init"):
        become_init(keep_fds, plan.get("user"))
    set_rlimits(plan.get("rlimits", {}))
    if plan.get("chdir"):
        os.chdir(plan["chdir"])
    if plan.get("landlock"):
        apply_landlock(plan["landlock"])
    if plan.get("user"):
        drop_privileges(*plan["user"])
    die_with_parent()
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    if spec.get("probe"):
        run_probe(spec["probe"])
        return "probe"
    return "run"


def set_rlimits(limits: dict[str, int | None]) -> None:
    for name, value in limits.items():
        if value is not None:
            resource.setrlimit(getattr(resource, name), (value, value))


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies (set again after a change of user, which clears it).

    The harness starts each child with the same setting, and `unshare --kill-child` passes it to the
    namespace's init: a harness killed hard takes its children, their inits and everything in their
    namespaces with it.
    """
    _check(_libc.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def drop_privileges(uid: int, gid: int, groups: list[int] = ()) -> None:
    """Become an unprivileged user for good (real, effective and saved ids; only the device groups)."""
    os.setgroups(list(groups))
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise ConfinementError(1, "the user or group did not change")


def apply_landlock(rules: dict) -> None:
    ruleset = landlock.Ruleset(int(rules["abi"]))
    for path in rules.get("read", []):
        ruleset.allow(path, landlock.READ)
    for path in rules.get("write", []):
        ruleset.allow(path, landlock.READ | landlock.WRITE)
    for path in rules.get("devices", []):
        ruleset.allow(path, landlock.DEVICES)
    ruleset.enforce()


def become_init(keep_fds: list[int], user: list[int] | None) -> None:
    """Fork: the child returns and runs the candidate; this process stays PID 1 and reaps until it ends.

    PID 1 of a namespace ignores signals it has no handler for, so the candidate must not be it; and when
    PID 1 exits the kernel kills everything else in the namespace. The exit status says how the candidate
    ended: its own status, or 128 + the signal that killed it.
    """
    candidate = os.fork()
    if candidate == 0:
        return
    for fd in keep_fds:
        os.close(fd)  # so that the harness sees end-of-file the moment the candidate is gone
    if user:
        drop_privileges(*user)
    die_with_parent()
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(70)
        if pid == candidate:
            os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def build_root(root: dict) -> None:
    """A new root: read-only binds of the listed paths, a minimal /dev, private tmpfs, the temp dir; pivot."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    staging = root["staging"]
    mount("tmpfs", staging, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    binds = root_binds(root)
    sources = {target: os.open(source, os.O_PATH | os.O_CLOEXEC) for source, target, _ in binds}
    recursive = {target: deep for _, target, deep in binds}
    steps = sorted(
        [(path, "tmpfs", str(size)) for path, size in root.get("tmpfs", {}).items()]
        + [(target, "bind", "") for target in sources],
        key=lambda step: (step[0].count("/"), step[0]),
    )
    for link, target in root.get("links", {}).items():
        _ensure_parent(staging, link)
        os.symlink(target, staging + link)
    if root.get("sysfs"):  # the network namespace's own view (its interfaces only), read-only
        os.makedirs(staging + "/sys", exist_ok=True)
        mount("sysfs", staging + "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path, kind, size in steps:
        where = staging + path
        if kind == "tmpfs":
            os.makedirs(where, exist_ok=True)
            mode = "1777" if path != "/dev" else "0755"
            mount("tmpfs", where, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},size={size}")
            if path == "/dev":
                for name, link in DEVICE_LINKS.items():
                    os.symlink(link, f"{where}/{name}")
        else:
            _bind_at(sources[path], where, recursive[path])
    pivot_into(staging)
    writable = set(root.get("writable", [])) | {target for _, target in root.get("binds", [])}
    writable |= {path for path in root.get("tmpfs", {}) if path != "/dev"}
    make_read_only(writable)


def root_binds(root: dict) -> list[tuple[str, str, bool]]:
    """(source, target, recursive) of every bind of the new root.

    System paths and devices come with what is mounted under them; the temp dir (read-only), the writable
    folders and the other binds come alone, so that nothing mounted inside them (the staging root is)
    follows them in.
    """
    deep = [*root.get("read_only", []), *root.get("devices", [])]
    flat = [*root.get("temp_dir", []), *root.get("writable", [])]
    return (
        [(path, path, True) for path in deep]
        + [(path, path, False) for path in flat]
        + [(source, target, False) for source, target in root.get("binds", [])]
    )


def _ensure_parent(staging: str, path: str) -> None:
    os.makedirs(os.path.dirname(staging + path), exist_ok=True)


def _bind_at(fd: int, where: str, recursive: bool) -> None:
    source = f"/proc/self/fd/{fd}"
    if os.path.isdir(source):
        os.makedirs(where, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(where), exist_ok=True)
        if not os.path.exists(where):
            with open(where, "w", encoding="ascii"):
                pass
    mount(source, where, None, MS_BIND | (MS_REC if recursive else 0))
    os.close(fd)


def pivot_into(new_root: str) -> None:
    """Make new_root the root of this mount namespace and detach the old one."""
    number = PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise ConfinementError(38, f"pivot_root: unknown system call number on {platform.machine()}")
    os.chdir(new_root)
    _check(_libc.syscall(number, b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "detaching the old root")
    os.chdir("/")


def mount_points() -> list[tuple[str, int]]:
    """(mount point, per-mount flags) of every mount, the topmost entry for each point."""
    found: dict[str, int] = {}
    with open("/proc/self/mountinfo", encoding="utf-8") as lines:
        for line in lines:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")
            flags = sum(OPTION_FLAGS.get(option, 0) for option in fields[5].split(","))
            found[point] = flags
    return sorted(found.items())


def make_read_only(writable: set[str]) -> None:
    """Remount every mount read-only except /proc and the writable ones themselves (a mount under a
    writable one, such as the temp dir under /tmp, is read-only unless listed too)."""
    for point, flags in mount_points():
        if point == "/proc" or point.startswith("/proc/") or point in writable:
            continue
        mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


def run_probe(checks: dict) -> None:
    """What a launch probe verifies once confined: the interpreter finds and reads torch (and uses CUDA)."""
    import importlib.util

    for module in checks.get("modules", []):
        found = importlib.util.find_spec(module)
        if found is None or not found.origin:
            raise ConfinementError(2, f"{module} cannot be found inside the sandbox")
        with open(found.origin, "rb") as handle:
            handle.read(1)
    if sys.flags.isolated != 1:
        raise ConfinementError(1, "the interpreter is not in isolated mode")
    if checks.get("cuda"):
        import torch

        torch.ones(1, device="cuda").add_(1)
        torch.cuda.synchronize()
