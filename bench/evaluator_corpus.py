"""The benchmark batch: honest and adversarial kernels on built-in tasks, as a manifest for any device."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script from anywhere: the project's packages

from tasks.registry import cpu_task_file  # noqa: E402

KERNELS = ROOT / "tests" / "evaluator" / "kernels"
TASKS = ROOT / "tasks" / "builtin"

RELU = "level1/9_ReLU.py"
MATMUL = "level1/1_Square_matrix_multiplication.py"
EPILOGUE = "level2/8_Matmul_Divide_Clamp_Residual.py"

GPU_CORPUS = [
    ("honest_cuda_relu", RELU),
    ("honest_cuda_fused_epilogue", EPILOGUE),
    ("honest_triton_relu", RELU),
    ("honest_triton_matmul", MATMUL),
    ("honest_torch_matmul", MATMUL),
    ("adv_side_stream", MATMUL),
    ("adv_stale_memory", RELU),
    ("adv_cache_by_pointer", RELU),
    ("adv_cache_by_identity", RELU),
    ("adv_return_input", RELU),
    ("adv_precision_flags", MATMUL),
    ("adv_monkeypatch_torch", RELU),
    ("adv_ghost_branch", RELU),
    ("adv_tensor_subclass", RELU),
    ("adv_mutate_input", RELU),
    ("adv_illegal_memory", RELU),
]


def cuda_variants(folder: Path, count: int) -> list[Path]:
    """Copies of the honest CUDA ReLU with distinct sources and extension names: each is a cold build."""
    template = (KERNELS / "honest_cuda_relu.py").read_text()
    paths = []
    for index in range(count):
        path = folder / f"variant_cuda_relu_{index}.py"
        path.write_text(template.replace('"honest_relu_ext"', f'"variant_relu_ext_{index}"'))
        paths.append(path)
    return paths


def manifest(folder: Path, device: str, variants: int = 5, cpu_sized: bool = False, **options) -> Path:
    """Write the corpus manifest (15 kernels + CUDA variants) into folder; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)

    def task(relative: str) -> str:
        path = Path(relative)
        if cpu_sized:
            return str(cpu_task_file(int(path.parent.name.removeprefix("level")), path.stem))
        return str(TASKS / path)

    kernels = [
        {"id": name, "task_path": task(task_file), "kernel_path": str(KERNELS / f"{name}.py")}
        for name, task_file in GPU_CORPUS
    ]
    kernels += [
        {"id": path.stem, "task_path": task(RELU), "kernel_path": str(path)}
        for path in cuda_variants(folder, variants)
    ]
    path = folder / "manifest.json"
    path.write_text(
        json.dumps({"device": device, "mode": "hardened", "kernels": kernels, **options}, indent=1)
    )
    return path


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    target = manifest(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "cuda")
    logging.getLogger(__name__).info("wrote %s", target)
