"""The sandbox's layers one by one: what each stops on its own, and the helpers the harness trusts.

The matrix runs the same escape kernels with all layers but one turned off (EVALUATOR_SANDBOX_DISABLE),
so each claim of docs/security.md is pinned to the layer that makes it true, including the escapes a
layer alone does not stop.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from evaluator.sandbox import cgroups, isolation, untrusted
from tests.hardening.harness import ESCAPED, ROOT, entry, run_batch, sandbox_report, task

RELU = task(1, "9_ReLU")
SOCKETS = ("/run/postgresql/.s.PGSQL.5432", "/var/run/postgresql/.s.PGSQL.5432", "/tmp/.s.PGSQL.5432")
EVERY_LAYER = ("network", "pid", "root", "user", "landlock", "cgroup", "tmpfs")
# Configuration: (layers kept, kernels it must contain, kernels that get through it alone).
MATRIX = {
    "landlock": (
        {"landlock"},
        ["esc_redis_loopback", "esc_read_settings", "esc_write_outside", "esc_tamper_harness"],
        # Landlock does not cover connecting to a UNIX socket by path: the new root does.
        ["esc_postgres_unix_socket"],
    ),
    "new root": (
        {"network", "pid", "root"},
        ["esc_postgres_unix_socket", "esc_read_settings", "esc_write_outside", "esc_tamper_harness"],
        [],
    ),
    "network only (the sandbox before hardening)": (
        {"network"},
        ["esc_redis_loopback", "esc_postgres_loopback"],
        ["esc_postgres_unix_socket", "esc_read_settings"],
    ),
}


def test_open_regular_refuses_links_fifos_and_oversized_files(tmp_path):
    good = tmp_path / "good.pt"
    good.write_bytes(b"x" * 100)
    with untrusted.open_regular(good, 100) as stream:
        assert stream.read() == b"x" * 100
    with pytest.raises(untrusted.UntrustedFileError, match="more than the 99 allowed"):
        untrusted.open_regular(good, 99)
    (tmp_path / "link.pt").symlink_to(good)
    with pytest.raises(untrusted.UntrustedFileError, match="symbolic links"):
        untrusted.open_regular(tmp_path / "link.pt", 1000)
    os.mkfifo(tmp_path / "fifo.pt")
    started = time.monotonic()
    with pytest.raises(untrusted.UntrustedFileError, match="not a regular file"):
        untrusted.open_regular(tmp_path / "fifo.pt", 1000)
    assert time.monotonic() - started < 5  # opening never waited for a writer


def test_copy_tree_keeps_times_and_skips_everything_but_files_and_folders(tmp_path):
    source = tmp_path / "built"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "ext.so").write_bytes(b"elf")
    os.utime(source / "sub" / "ext.so", ns=(1_000_000_000, 1_234_567_890_123))
    (source / "leak").symlink_to("/etc/shadow")
    os.mkfifo(source / "pipe")
    copied = untrusted.copy_tree(source, tmp_path / "copy", 1 << 20)
    assert copied == 3
    assert (tmp_path / "copy" / "sub" / "ext.so").read_bytes() == b"elf"
    assert os.stat(tmp_path / "copy" / "sub" / "ext.so").st_mtime_ns == 1_234_567_890_123
    assert sorted(path.name for path in (tmp_path / "copy").iterdir()) == ["sub"]
    with pytest.raises(untrusted.UntrustedFileError):
        untrusted.copy_tree(source, tmp_path / "small", 2)


def test_a_child_cgroup_limits_memory_and_is_removed_with_its_processes():
    found, reason = cgroups.detect()
    if not found:
        pytest.skip(reason)
    group = cgroups.ChildGroup(found, memory_bytes=64 << 20, max_tasks=16)
    procs = group.create()
    sleeper = subprocess.Popen(
        [sys.executable, "-c", f"open({procs[0]!r}, 'w').write('0'); import time; time.sleep(600)"]
    )
    try:
        deadline = time.monotonic() + 30
        while sleeper.pid not in group.members() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sleeper.pid in group.members()
        limit = next(h for h in found if h.controller == "memory")
        assert (group.folder(limit) / limit.limit_file).read_text().strip() == str(64 << 20)
    finally:
        group.destroy()
    assert sleeper.wait(timeout=30) == -9  # killed by destroy()
    assert not any(group.folder(h).exists() for h in found)


def test_every_layer_is_reported_on_or_explained():
    report = sandbox_report("cpu")
    values = {
        "network": report["network_namespace"],
        "pid": report["pid_namespace_init"],
        "root": report["filesystem_isolation"],
        "user": report["unprivileged_user"],
        "landlock": report["landlock"],
        "cgroup": report["cgroup"],
    }
    for layer, value in values.items():
        assert bool(value) != (layer in report["absent"]), (layer, report["absent"])


def test_a_disabled_layer_is_reported_as_such(monkeypatch):
    monkeypatch.setenv("EVALUATOR_SANDBOX_DISABLE", "landlock,cgroup")
    report = sandbox_report("cpu")
    assert report["landlock"] is None
    assert report["cgroup"] is None
    assert report["absent"]["landlock"] == "disabled by EVALUATOR_SANDBOX_DISABLE"


@pytest.mark.slow
@pytest.mark.parametrize("configuration", sorted(MATRIX))
def test_what_one_layer_stops_on_its_own(tmp_path, monkeypatch, configuration):
    kept, contained, escaping = MATRIX[configuration]
    report = sandbox_report("cpu")
    missing = {layer for layer in kept if layer in report["absent"]}
    if missing:
        pytest.skip(f"this host lacks {missing}: {report['absent']}")
    monkeypatch.setenv("EVALUATOR_SANDBOX_DISABLE", ",".join(set(EVERY_LAYER) - kept))
    entries = [entry(name, RELU) for name in contained + escaping]
    completed, results = run_batch(tmp_path, entries, baselines=["eager"], trials=3, run_timeout=30)
    assert completed.returncode == 0, completed.stderr[-3000:]
    for name in contained:
        if name == "esc_write_outside":
            # Judged on the host: where the project itself lies under /tmp, the new root's private /tmp
            # gives the kernel a writable folder of that name, so its own "ESCAPED" would mislead.
            assert not host_markers(), host_markers()
            continue
        assert ESCAPED not in results[name]["log"], (name, results[name]["log"][-1000:])
        assert not results[name]["correct"], name
    for name in escaping:
        if name == "esc_postgres_unix_socket" and not any(os.path.exists(path) for path in SOCKETS):
            continue  # no PostgreSQL listening on a socket here (or restarting): nothing to get through to
        assert ESCAPED in results[name]["log"], (name, results[name]["error"])


def host_markers() -> list[str]:
    """The write-outside kernel's marker files that exist on the host (there must be none)."""
    folders = [ROOT / "evaluator", ROOT, Path("/var/tmp"), Path("/"), Path("/usr/local"), Path("/etc")]
    return [str(folder) for folder in folders if (folder / "kb-escape-marker").exists()]


def test_the_harness_root_is_never_part_of_the_sandbox_view():
    from evaluator.sandbox.isolation import visible_paths

    paths, links = visible_paths(sys.executable)
    root = str(ROOT)
    for path in [*paths, *links.values()]:
        assert path != root
        assert not root.startswith(path.rstrip("/") + "/"), path
    assert str(ROOT / "evaluator") in paths


def test_a_host_refusing_the_dedicated_user_ids_falls_back_to_nobody(monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("the unprivileged user layer needs a root worker")
    monkeypatch.setenv("EVALUATOR_SANDBOX_UID_BASE", str(2**32 - 1))  # -1: setresuid would change nothing
    report = sandbox_report("cpu")
    if report["absent"].get("user"):
        pytest.skip(f"no unprivileged user on this host: {report['absent']['user']}")
    assert report["unprivileged_user"] == "uid 65534, shared by every child"
    assert "did not change" in report["absent"]["dedicated user ids"]


def dead_pid() -> int:
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(finished.stdout)


def test_a_later_harness_removes_what_a_killed_one_left(tmp_path):
    found, _ = cgroups.detect()
    dead, alive = dead_pid(), os.getpid()
    stale_dir = Path(tempfile.gettempdir()) / f"kb-eval-{dead}-left"
    live_dir = Path(tempfile.gettempdir()) / f"kb-eval-{alive}-live"
    for folder in (stale_dir, live_dir):
        (folder / "scratch").mkdir(parents=True)
    groups = [cgroups.ChildGroup(found, 1 << 30, 16, name=f"kb-eval-{pid}-x") for pid in (dead, alive)]
    for group in groups if found else []:
        group.create()
    try:
        sandbox_report("cpu")  # a fresh harness process probes its layers, and cleans up first
        assert not stale_dir.exists()
        assert live_dir.exists()
        if found:
            assert not any(groups[0].folder(h).exists() for h in found)
            assert all(groups[1].folder(h).exists() for h in found)
    finally:
        shutil.rmtree(live_dir, ignore_errors=True)
        for group in groups if found else []:
            group.destroy()


@pytest.mark.slow
def test_a_harness_stopped_with_sigterm_leaves_nothing(tmp_path):
    manifest = tmp_path / "manifest.json"
    kernels = [
        {
            "id": "spin",
            "task_path": str(RELU),
            "kernel_path": str(ROOT / "tests/hardening/kernels/esc_spin_forever.py"),
        }
    ]
    manifest.write_text(json.dumps({"device": "cpu", "kernels": kernels, "baselines": ["eager"]}))
    command = [
        sys.executable,
        "-m",
        "evaluator",
        "batch",
        "--manifest",
        str(manifest),
        "--out",
        str(tmp_path / "out"),
    ]
    harness = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pattern = f"kb-eval-{harness.pid}-*"
    deadline = time.monotonic() + 120
    while not list(Path(tempfile.gettempdir()).glob(pattern)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list(Path(tempfile.gettempdir()).glob(pattern)), "the kernel never started"
    time.sleep(3)  # the child is confined and spinning
    harness.send_signal(signal.SIGTERM)
    assert harness.wait(timeout=60) == 128 + signal.SIGTERM
    assert not list(Path(tempfile.gettempdir()).glob(pattern))
    found, _ = cgroups.detect()
    assert not any(list(h.base.glob(f"kb-eval-{harness.pid}-*")) for h in found)


def test_on_a_gpu_host_a_layer_that_stops_cuda_is_left_out_and_reported(monkeypatch):
    """Seen on an H200 host: Landlock made CUDA's initialisation fail (error 304), so detection must notice
    CUDA failing inside the full sandbox and drop the single layer responsible, saying why."""
    from evaluator.sandbox import isolation

    def probe(layers, python, cuda=False):
        return "Error 304: OS call failed" if cuda and layers.landlock_abi else None

    monkeypatch.setattr(isolation, "_probe", probe)
    full = isolation.Layers(unshare=("unshare", "-n"), new_root=True, user=True, landlock_abi=7, absent={})
    kept = isolation.keep_cuda_working(full, "python3")
    assert (kept.landlock_abi, kept.new_root, kept.user) == (0, True, True)
    assert "CUDA does not initialise with it" in kept.absent["landlock"]
    assert isolation.keep_cuda_working(kept, "python3") is kept


def test_a_probe_cut_off_mid_traceback_is_told_apart_from_its_error():
    def done(stderr: str) -> subprocess.CompletedProcess:
        return subprocess.CompletedProcess(["probe"], 1, "", stderr)

    error = 'Traceback (most recent call last):\n  File "<string>", line 4\nOSError: [Errno 1] no\n'
    assert isolation.failure_reason(done(error)) == "OSError: [Errno 1] no"
    assert isolation.failure_reason(done("Traceback (most recent call last):\n")) == isolation.CUT_OFF
    assert isolation.failure_reason(done(error[:60])) == isolation.CUT_OFF
    assert isolation.failure_reason(done("")) == "exit status 1"
