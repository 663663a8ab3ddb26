"""What can be read off task and kernel files without running them: names, levels, hashes, backend."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

LEVEL_PART = re.compile(r"^level_?(\d+)$")
PROBLEM_NAME = re.compile(r"^(\d+)_(.+)$")


def kernelbench_hash(source: str) -> str:
    """KernelBench's problem hash: MD5 of the code without docstrings, comments and whitespace."""
    without_docstrings = re.sub(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'', "", source)
    cleaned = re.sub(r"#.*$|\s+", "", without_docstrings, flags=re.MULTILINE)
    return hashlib.md5(cleaned.encode("utf-8")).hexdigest()  # noqa: S324 - an identifier, not security


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def task_identity(path: Path, source: str) -> dict[str, Any]:
    """The result's task block: level and id from a KernelBench-style path, else null."""
    stem = path.name.removesuffix(".py").removesuffix(".cpu")
    match = PROBLEM_NAME.match(stem)
    level = next((int(m.group(1)) for part in reversed(path.parts) if (m := LEVEL_PART.match(part))), None)
    return {
        "path": str(path),
        "name": stem,
        "level": level,
        "problem_id": int(match.group(1)) if match else None,
        "hash": kernelbench_hash(source),
    }


def kernel_backend(source: str) -> str:
    """cuda (load_inline or raw CUDA), triton (@triton.jit), torch (PyTorch only) or unknown."""
    if re.search(r"load_inline|cpp_extension|__global__|cuda_sources", source):
        return "cuda"
    if re.search(r"triton\.jit|@jit\b|import triton|from triton", source):
        return "triton"
    if re.search(r"class\s+ModelNew\b", source):
        return "torch"
    return "unknown"


def kernel_identity(path: Path, source: str) -> dict[str, Any]:
    return {"path": str(path), "sha256": sha256_text(source), "backend": kernel_backend(source)}
