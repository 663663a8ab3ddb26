"""Build ahead, in parallel, every CUDA kernel that the GPU validation evaluates (tests and pipeline bundle).

    python bench/gpu_prebuild.py CACHE_DIR

Writes a manifest of those kernels and runs `python -m evaluator batch --compile-only` on it, so the tests,
which evaluate one kernel at a time, load each build from CACHE_DIR instead of building it in turn.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from evaluator.manifest import batch_command, write_manifest  # noqa: E402

KERNELS = ROOT / "tests" / "evaluator" / "kernels"
TASKS = ROOT / "tasks" / "builtin"
BUNDLE = ROOT / "bench" / "submissions_gpu_bundle"
TEST_KERNELS = {
    "honest_cuda_fused_epilogue": "level2/8_Matmul_Divide_Clamp_Residual.py",
    "honest_cuda_relu": "level1/9_ReLU.py",
    "adv_illegal_memory": "level1/9_ReLU.py",
}
logger = logging.getLogger("bench.prebuild")


def bundle_task(kernel: Path) -> Path:
    """tasks/builtin/level{L}/{P}_*.py for a level_{L}_problem_{P}_sample_{S}_kernel.py file."""
    parts = kernel.stem.split("_")
    level, problem = parts[1], parts[3]
    return next((TASKS / f"level{level}").glob(f"{problem}_*.py"))


def entries() -> list[dict]:
    kernels = [(KERNELS / f"{name}.py", TASKS / task) for name, task in TEST_KERNELS.items()]
    kernels += [
        (path, bundle_task(path))
        for path in sorted(BUNDLE.rglob("*_kernel.py"))
        if "load_inline" in path.read_text(encoding="utf-8")
    ]
    return [
        {"id": f"k{index}-{kernel.stem}", "task_path": str(task), "kernel_path": str(kernel)}
        for index, (kernel, task) in enumerate(kernels)
    ]


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    cache = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as folder:
        kernels = entries()
        manifest = write_manifest(Path(folder) / "manifest.json", "cuda", "hardened", kernels)
        started = time.monotonic()
        command = batch_command(manifest, Path(folder) / "out", cache_dir=cache, compile_only=True)
        code = subprocess.run(command, cwd=ROOT, check=False).returncode
        for failed in sorted((Path(folder) / "out").glob("k*.json")):
            logger.info("build failed: %s", json.loads(failed.read_text())["error"])
    logger.info(
        "%d CUDA kernel(s) built ahead in %.1f s (exit %d)", len(kernels), time.monotonic() - started, code
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
