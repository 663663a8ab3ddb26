"""The environment a verdict was measured in: GPU, driver, CUDA, library versions, precision, sandbox.

Read without importing torch (package metadata, torch's version file, nvidia-smi): the harness process never
initialises CUDA; its children do.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from evaluator import HARNESS_VERSION

# The settings every child pins before it computes (evaluator.child.integrity.settle_torch).
PRECISION = {
    "dtype": "fp32",
    "float32_matmul_precision": "highest",
    "cuda_matmul_allow_tf32": False,
    "cudnn_allow_tf32": False,
    "cuda_matmul_allow_fp16_reduced_precision_reduction": True,
    "cuda_matmul_allow_bf16_reduced_precision_reduction": True,
}
GPU_FIELDS = (
    "name",
    "memory.total",
    "compute_cap",
    "driver_version",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "power.limit",
)


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def distribution_version(prefix: str) -> str | None:
    """The version of the first installed distribution whose name starts with prefix (e.g. nvidia-cudnn)."""
    for distribution in importlib.metadata.distributions():
        name = (distribution.metadata.get("Name") or "").lower()
        if name.startswith(prefix):
            return distribution.version
    return None


def torch_cuda_version() -> str | None:
    """The CUDA version torch was built with, read from torch/version.py without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    with contextlib.suppress(OSError):
        text = (Path(next(iter(spec.submodule_search_locations))) / "version.py").read_text()
        match = re.search(r"^cuda\s*(?::\s*\S+)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
        return match.group(1) if match else None
    return None


def nvidia_smi() -> dict[str, str] | None:
    """The fields of GPU 0 (of CUDA_VISIBLE_DEVICES), or None where there is no nvidia-smi or no GPU."""
    binary = shutil.which("nvidia-smi")
    if not binary:
        return None
    visible = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0] or "0"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        completed = subprocess.run(
            [
                binary,
                f"--query-gpu={','.join(GPU_FIELDS)}",
                "--format=csv,noheader,nounits",
                f"--id={visible}",
            ],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        values = [value.strip() for value in completed.stdout.strip().split(",")]
        if completed.returncode == 0 and len(values) == len(GPU_FIELDS):
            return dict(zip(GPU_FIELDS, values, strict=True))
    return None


def gpu_description() -> dict[str, Any]:
    fields = nvidia_smi()
    if not fields:
        return {}
    memory_mib = float(fields["memory.total"]) if fields["memory.total"].replace(".", "").isdigit() else 0.0
    return {
        "name": fields["name"],
        "capability": fields["compute_cap"],
        "memory_gib": round(memory_mib / 1024, 1),
        "memory_bytes": int(memory_mib * 2**20),
        "driver": fields["driver_version"],
        "clocks_mhz": f"{fields['clocks.sm']}, {fields['clocks.mem']}, {fields['clocks.max.sm']}",
        "power_limit": fields["power.limit"],
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def cuda_arch_list() -> str | None:
    """TORCH_CUDA_ARCH_LIST for this GPU only (e.g. '9.0' on H100/H200), so builds target one arch."""
    fields = nvidia_smi()
    return fields["compute_cap"] if fields and re.fullmatch(r"\d+\.\d+", fields["compute_cap"]) else None


def collect(device: str, sandbox: dict[str, Any]) -> dict[str, Any]:
    """Everything needed to read a timing later: hardware, versions, precision settings, sandbox layers."""
    return {
        "harness_version": HARNESS_VERSION,
        "device": device,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch": package_version("torch"),
        "triton": package_version("triton"),
        "cuda": torch_cuda_version(),
        "cudnn": distribution_version("nvidia-cudnn"),
        "gpu": gpu_description() if device == "cuda" else {},
        "precision": dict(PRECISION),
        "triton_interpret": device == "cpu",
        "sandbox": sandbox,
    }
