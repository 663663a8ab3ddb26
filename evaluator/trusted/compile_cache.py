"""The worker's caches: built extensions by kernel source hash (with a manifest to notice tampering), and
the reference processes' torch.compile cache, which only reference processes ever see."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

MARKER = "built.json"
# What a build leaves that a later load must find unchanged; ninja's logs change on every load.
BUILD_SUFFIXES = (".so", ".o", ".cpp", ".cu", ".cuh", ".h", ".ninja")


@dataclass(frozen=True)
class CompileCache:
    """root/ext/<sha[:2]>/<sha>/: the TORCH_EXTENSIONS_DIR of every kernel with that source;
    root/baselines/: TORCHINDUCTOR_CACHE_DIR (and Triton's cache) of every reference process."""

    root: Path

    def baseline_dir(self) -> Path:
        return self.root / "baselines"

    def extension_dir(self, kernel_sha: str) -> Path:
        return self.root / "ext" / kernel_sha[:2] / kernel_sha

    def manifest(self, kernel_sha: str) -> dict[str, str]:
        folder = self.extension_dir(kernel_sha)
        return {
            str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*"))
            if path.is_file() and path.suffix in BUILD_SUFFIXES
        }

    def mark_built(self, kernel_sha: str) -> None:
        folder = self.extension_dir(kernel_sha)
        (folder / MARKER).write_text(json.dumps(self.manifest(kernel_sha)))

    def is_built(self, kernel_sha: str) -> bool:
        """A marker exists and every file still has the hash recorded when it was built."""
        marker = self.extension_dir(kernel_sha) / MARKER
        if not marker.exists():
            return False
        try:
            return json.loads(marker.read_text()) == self.manifest(kernel_sha)
        except (OSError, ValueError):
            return False

    def prepare(self, kernel_sha: str) -> Path:
        """The kernel's folder, emptied first if its contents no longer match the manifest."""
        folder = self.extension_dir(kernel_sha)
        if folder.exists() and (folder / MARKER).exists() and not self.is_built(kernel_sha):
            shutil.rmtree(folder)
        folder.mkdir(parents=True, exist_ok=True)
        return folder
