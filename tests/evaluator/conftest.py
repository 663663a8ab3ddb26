"""Fixtures for the harness tests: task and kernel paths, and running the CLI as a subprocess."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.registry import cpu_task_file

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parent / "kernels"


def cpu_task(level: int, name: str) -> Path:
    return cpu_task_file(level, name)


RELU = cpu_task(1, "9_ReLU")
MATMUL = cpu_task(1, "1_Square_matrix_multiplication")
SOFTMAX_WIDE = cpu_task(1, "3_Softmax_wide")
GELU = cpu_task(1, "7_GELU")


def run_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evaluator", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("compile-cache")


@pytest.fixture
def evaluate(tmp_path, cache_dir):
    """Run `python -m evaluator run` on CPU and return (exit code, result JSON, CLI output)."""

    def run(task: Path, kernel: Path, *extra: str) -> tuple[int, dict, str]:
        out = tmp_path / f"{kernel.stem}.json"
        completed = run_cli(
            "run",
            "--task",
            str(task),
            "--kernel",
            str(kernel),
            "--device",
            "cpu",
            "--cache-dir",
            str(cache_dir),
            "--json",
            str(out),
            *extra,
        )
        result = json.loads(out.read_text()) if out.exists() else {}
        return completed.returncode, result, completed.stdout + completed.stderr

    return run
