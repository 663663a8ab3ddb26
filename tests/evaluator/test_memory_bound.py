"""The harness's memory is bounded by one trial's tensors, whatever the trials, rounds or canaries (CPU).

A task of 256 MiB in and 256 MiB out goes through `python -m evaluator batch` while the test samples the
proportional memory (PSS) of the harness and of every process under it: the peak of them together must stay
under 2 × (one input set + one output) + 2 GiB, and no file the kernel's child leaves in its temp dir may be
larger than a shared-memory slot (no tensor ever goes through a file).
"""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.evaluator.conftest import ROOT

pytestmark = pytest.mark.slow

MiB, GiB = 1 << 20, 1 << 30
ROWS, COLUMNS = 8192, 8192  # 64 Mi float32 elements: 256 MiB in, 256 MiB out
TASK = f"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand({ROWS}, {COLUMNS}) - 0.5]


def get_init_inputs():
    return []
"""
KERNEL = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp_min(x, 0.0)
"""


def descendants(root: int) -> list[int]:
    """root and every process under it (children in PID namespaces keep their host pids in /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    found, frontier = [root], [root]
    while frontier:
        children = parents.get(frontier.pop(), [])
        found += children
        frontier += children
    return found


def pss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return 0
    return 0


class TreeSampler(threading.Thread):
    """The peak, over time, of the summed PSS of a process tree."""

    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root, self.peak, self.running = root, 0, True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, sum(pss(pid) for pid in descendants(self.root)))
            time.sleep(0.05)


def test_a_quarter_gigabyte_problem_stays_within_the_bound(tmp_path):
    (tmp_path / "task.py").write_text(TASK)
    (tmp_path / "kernel.py").write_text(KERNEL)
    kernels = [
        {"id": "relu", "task_path": str(tmp_path / "task.py"), "kernel_path": str(tmp_path / "kernel.py")}
    ]
    options = {"baselines": ["eager"], "trials": 2, "warmup": 1, "run_timeout": 900}
    (tmp_path / "manifest.json").write_text(json.dumps({"device": "cpu", "kernels": kernels, **options}))
    command = [sys.executable, "-m", "evaluator", "batch", "--manifest", str(tmp_path / "manifest.json")]
    command += ["--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    harness = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ
    )
    sampler = TreeSampler(harness.pid)
    sampler.start()
    try:
        _, errors = harness.communicate(timeout=1500)
    finally:
        sampler.running = False
        sampler.join()
    assert harness.returncode == 0, errors[-3000:]
    result = json.loads((tmp_path / "out" / "relu.json").read_text())
    assert result["correct"], result["error"]
    input_bytes, output_bytes = result["resources"]["input_bytes"], result["resources"]["output_bytes"]
    assert input_bytes == output_bytes == ROWS * COLUMNS * 4
    bound = 2 * (input_bytes + output_bytes) + 2 * GiB
    assert 0 < sampler.peak <= bound, (
        f"peak {sampler.peak / GiB:.2f} GiB over the bound {bound / GiB:.2f} GiB"
    )
    assert result["resources"]["kernel_temp_dir"]["largest_file_bytes"] <= 64 * MiB
    assert result["correctness"]["total"] == 9  # every trial ran, each within the bound
