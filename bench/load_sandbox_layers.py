"""What the sandbox layers cost an evaluation: the same CPU batch with every layer this host allows, and
with the network namespace alone (the sandbox before the hardening work), alternated, side by side.

    python bench/load_sandbox_layers.py [--rounds 2]

Each round runs `python -m evaluator batch` twice on six honest CPU kernels (Triton and PyTorch; eager
baseline, 10 timed trials): once as configured, once with EVALUATOR_SANDBOX_DISABLE set to every layer
but the network. It reports each batch's wall time, the median per-kernel `durations_s.total`, and the
ratio of the two. Nothing here asserts a time; the figures go to docs/performance.md by hand.
"""

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script from anywhere: the project's packages

from tasks.registry import cpu_task_file  # noqa: E402

KERNELS = ROOT / "tests"
PAIRS = [
    ("9_ReLU", "evaluator/kernels/honest_triton_relu.py"),
    ("9_ReLU", "hardening/kernels/honest_relu.py"),
    ("1_Square_matrix_multiplication", "evaluator/kernels/honest_torch_matmul.py"),
]
BATCH = [(f"kernel_{index}", task, kernel) for index, (task, kernel) in enumerate(PAIRS * 2)]
CONFIGURATIONS = {
    "every layer this host allows": "",
    "network namespace only": "pid,root,user,landlock,cgroup,tmpfs",
}

logger = logging.getLogger("bench.sandbox")


def manifest(folder: Path) -> Path:
    kernels = [
        {"id": name, "task_path": str(cpu_task_file(1, task)), "kernel_path": str(KERNELS / kernel)}
        for name, task, kernel in BATCH
    ]
    path = folder / "manifest.json"
    document = {"device": "cpu", "mode": "hardened", "baselines": ["eager"], "trials": 10, "kernels": kernels}
    path.write_text(json.dumps(document))
    return path


def run_batch(folder: Path, disabled: str) -> tuple[float, list[float], dict]:
    """(wall seconds, per-kernel totals, the sandbox report) of one batch."""
    out = folder / "out"
    env = {**os.environ, "EVALUATOR_SANDBOX_DISABLE": disabled}
    command = [
        sys.executable,
        "-m",
        "evaluator",
        "batch",
        "--manifest",
        str(manifest(folder)),
        "--out",
        str(out),
    ]
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True, timeout=1800)
    wall = time.perf_counter() - started
    results = [json.loads((out / f"{name}.json").read_text()) for name, _, _ in BATCH]
    incorrect = [name for (name, _, _), result in zip(BATCH, results, strict=True) if not result["correct"]]
    totals = [result["durations_s"]["total"] for result in results]
    report = json.loads((out / "environment.json").read_text())["sandbox"]
    if incorrect:
        logger.info("  (not correct: %s)", ", ".join(incorrect))
    return wall, totals, report


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="Alternations of the two configurations.")
    args = parser.parse_args()
    walls = {name: [] for name in CONFIGURATIONS}
    totals = {name: [] for name in CONFIGURATIONS}
    logger.info(
        "CPU cores: %d; load average %s", os.cpu_count(), " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    for round_number in range(args.rounds):
        for name, disabled in CONFIGURATIONS.items():
            with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as folder:
                wall, per_kernel, report = run_batch(Path(folder), disabled)
            walls[name].append(wall)
            totals[name].extend(per_kernel)
            active = [
                key
                for key in (
                    "network_namespace",
                    "pid_namespace_init",
                    "filesystem_isolation",
                    "unprivileged_user",
                    "landlock",
                    "cgroup",
                )
                if report[key]
            ]
            logger.info(
                "round %d, %-30s batch %6.1f s, per kernel median %.2f s  (%s; temp dir %s)",
                round_number + 1,
                name,
                wall,
                statistics.median(per_kernel),
                ", ".join(active),
                report["temp_dir"],
            )
    full, bare = CONFIGURATIONS
    logger.info(
        "every layer / network only: batch %.2f, per kernel %.2f",
        statistics.median(walls[full]) / statistics.median(walls[bare]),
        statistics.median(totals[full]) / statistics.median(totals[bare]),
    )


if __name__ == "__main__":
    main()
