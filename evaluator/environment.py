"""The environment a verdict was measured in: GPU, driver, CUDA, library versions, precision, sandbox."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
from typing import Any

from evaluator import HARNESS_VERSION


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def nvidia_smi(query: str) -> str | None:
    """One field of nvidia-smi for GPU 0, or None where there is no nvidia-smi."""
    binary = shutil.which("nvidia-smi")
    if not binary:
        return None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        completed = subprocess.run(
            [binary, f"--query-gpu={query}", "--format=csv,noheader", "--id=0"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        if completed.returncode == 0:
            return completed.stdout.strip()
    return None


def gpu_description() -> dict[str, Any]:
    import torch

    if not torch.cuda.is_available():
        return {}
    properties = torch.cuda.get_device_properties(0)
    major, minor = torch.cuda.get_device_capability(0)
    return {
        "name": properties.name,
        "capability": f"{major}.{minor}",
        "multiprocessors": properties.multi_processor_count,
        "memory_gib": round(properties.total_memory / 2**30, 1),
        "l2_cache_mib": round(getattr(properties, "L2_cache_size", 0) / 2**20, 1),
        "driver": nvidia_smi("driver_version"),
        "clocks_mhz": nvidia_smi("clocks.sm,clocks.mem,clocks.max.sm"),
        "power_limit": nvidia_smi("power.limit"),
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def cuda_arch_list() -> str | None:
    """TORCH_CUDA_ARCH_LIST for this GPU only (e.g. '9.0' on H100/H200), so builds target one arch."""
    import torch

    if not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability(0)
    return f"{major}.{minor}"


def collect(device: str, sandbox: dict[str, Any]) -> dict[str, Any]:
    """Everything needed to read a timing later: hardware, versions, precision settings, sandbox layers."""
    import torch

    from evaluator.integrity import precision_state, set_precision_defaults

    set_precision_defaults()
    return {
        "harness_version": HARNESS_VERSION,
        "device": device,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "triton": package_version("triton"),
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "gpu": gpu_description() if device == "cuda" else {},
        "precision": {"dtype": "fp32", **precision_state()},
        "triton_interpret": device == "cpu",
        "sandbox": sandbox,
    }
