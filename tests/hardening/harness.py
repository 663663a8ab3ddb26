"""Running the real harness on hostile kernels, without Django (so the GPU host can run it too)."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from tasks.registry import cpu_task_file

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parent / "kernels"
TASKS = ROOT / "tasks" / "builtin"
ESCAPED = "ESCAPED"
# Values the harness's environment carries during the escape batches; none may reach a result or log.
SECRETS = {
    "DATABASE_URL": "postgres://leaked:hunter2@127.0.0.1:5432/never-seen",
    "SECRET_KEY": "kb-hardening-secret-key-never-leaves-the-worker",
    "REDIS_URL": "redis://:leaked-redis-password@127.0.0.1:6379/0",
}


def task(level: int, name: str, device: str = "cpu") -> Path:
    """A built-in problem's file: its CPU-sized variant for CPU runs."""
    return cpu_task_file(level, name) if device == "cpu" else TASKS / f"level{level}" / f"{name}.py"


def entry(name: str, task_path: Path, kernel: str | None = None) -> dict:
    return {"id": name, "task_path": str(task_path), "kernel_path": str(KERNELS / f"{kernel or name}.py")}


def run_batch(
    folder: Path,
    entries: list[dict],
    device: str = "cpu",
    timeout: float = 1500,
    mode_override: str = "hardened",
    **options,
):
    """`python -m evaluator batch` on these kernels; returns (completed process, results by id)."""
    manifest = folder / "manifest.json"
    document = {"device": device, "mode": mode_override, "kernels": entries, **options}
    manifest.write_text(json.dumps(document))
    out = folder / "out"
    command = [
        sys.executable,
        "-m",
        "evaluator",
        "batch",
        "--manifest",
        str(manifest),
        "--out",
        str(out),
        "--cache-dir",
        str(folder / "cache"),
    ]
    completed = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **SECRETS},
        check=False,
    )
    # Kernel results by id; the batch's environment.json is not one.
    results = {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}
    results.pop("environment", None)
    return completed, results


def severe(result: dict) -> set[str]:
    return {flag["code"] for flag in result["flags"] if flag["severity"] in ("suspect", "hack")}


def hacks(result: dict) -> set[str]:
    return {flag["code"] for flag in result["flags"] if flag["severity"] == "hack"}


def sandbox_report(device: str = "cpu", **limits) -> dict:
    """This host's sandbox layers as a batch with these limits reports them (probed the same way)."""
    code = (
        "import json, sys\n"
        "from evaluator.sandbox.isolation import enter_private_mount_namespace\n"
        "enter_private_mount_namespace()\n"
        "from evaluator.sandbox.limits import default_limits\n"
        "from evaluator.sandbox.report import sandbox_report\n"
        "print(json.dumps(sandbox_report(default_limits(sys.argv[1], **json.loads(sys.argv[2])))))\n"
    )
    command = [sys.executable, "-c", code, device, json.dumps(limits)]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=True)
    return json.loads(completed.stdout.splitlines()[-1])


def processes_running(fragment: bytes) -> list[int]:
    """Processes whose command line contains fragment (NUL-separated arguments)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if fragment in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
