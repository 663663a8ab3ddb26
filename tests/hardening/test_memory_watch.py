"""The harness's host-memory watch (hosts without a cgroup): a process tree over its limit is killed, and
only that tree; one under it is left alone."""

import os
import signal
import subprocess
import sys
import time

from evaluator.sandbox.memwatch import MemoryWatch, resident_bytes, tree

MiB = 1 << 20
# The parent starts a grandchild (the same code), which grows 16 MiB at a time, touching every page.
GROWER = """
import subprocess, sys, time
role, megabytes = sys.argv[1], int(sys.argv[2])
if role == "parent":
    subprocess.run([sys.executable, "-c", sys.argv[3], "child", sys.argv[2], sys.argv[3]], check=False)
else:
    hoard = []
    for _ in range(megabytes // 16):
        hoard.append(bytearray(16 << 20))
        time.sleep(0.01)
    time.sleep(1)
"""


def start(megabytes: int) -> subprocess.Popen:
    command = [sys.executable, "-c", GROWER, "parent", str(megabytes), GROWER]
    return subprocess.Popen(command, start_new_session=True)


def watched(megabytes: int, limit_mb: int) -> tuple[MemoryWatch, int]:
    process = start(megabytes)
    watch = MemoryWatch(process.pid, limit_mb * MiB, interval_s=0.02)
    watch.start()
    code = process.wait(timeout=60)
    watch.stop()
    watch.join(5)
    return watch, code


def test_a_tree_over_its_limit_is_killed_and_the_bytes_seen_are_kept():
    watch, code = watched(megabytes=1024, limit_mb=160)
    assert code == -signal.SIGKILL
    assert watch.tripped is not None
    assert (
        160 * MiB < watch.tripped < 1024 * MiB
    )  # the grandchild's memory counted; stopped long before 1 GiB


def test_a_tree_under_its_limit_runs_to_its_end():
    watch, code = watched(megabytes=48, limit_mb=400)
    assert code == 0
    assert watch.tripped is None
    assert watch.peak > 48 * MiB  # it saw the grandchild's memory


def test_the_tree_and_its_memory_are_read_from_proc():
    process = start(32)
    try:
        found = tree(process.pid)
        assert found[0] == process.pid
        assert resident_bytes(found) > 0
    finally:
        process.kill()
        process.wait()


def test_the_tree_is_the_same_without_proc_children_files(monkeypatch):
    """Kernels without CONFIG_PROC_CHILDREN: the tree comes from one pass over every /proc/PID/stat."""
    from evaluator.sandbox import memwatch

    process = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    try:
        for _ in range(100):
            if len(tree(process.pid)) == 3:
                break
            time.sleep(0.05)
        from_children_files = sorted(tree(process.pid))
        monkeypatch.setattr(memwatch, "CHILDREN_FILES", False)
        assert sorted(tree(process.pid)) == from_children_files
        assert len(from_children_files) == 3
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
