"""Sample tasks, kernels and bundles shared by the submission tests and the queue benchmark."""

import io
import json
import tarfile
import zipfile
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
RELU_TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand(64, 256)]


def get_init_inputs():
    return []
"""
TORCH_RELU_KERNEL = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp_min(x, 0.0)
"""
TRITON_RELU_KERNEL = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(src, dst, count, BLOCK: tl.constexpr):
    index = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = index < count
    tl.store(dst + index, tl.maximum(tl.load(src + index, mask=inside), 0.0), mask=inside)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 4096),)](x, out, x.numel(), BLOCK=4096)
        return out
"""
TORCH_GELU_KERNEL = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.erf(x * 0.7071067811865476))
"""
BROKEN_KERNEL = "import torch\n\nclass ModelNew(:\n    pass\n"


def zip_bytes(files: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def tar_gz_bytes(files: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def leaderboard_json(kernels: dict[str, str], metadata: dict | None = None) -> bytes:
    return json.dumps({"metadata": metadata or {"display_name": "test"}, "kernels": kernels}).encode()


def kernel_name(level: int, problem: int, sample: int = 0) -> str:
    return f"level_{level}_problem_{problem}_sample_{sample}_kernel.py"


def result_file(name: str) -> dict:
    """A real result JSON produced by `python -m evaluator batch` (kept under tests/submissions/results)."""
    return json.loads((RESULTS / f"{name}.json").read_text())
