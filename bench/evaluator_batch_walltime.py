"""Benchmark (c): wall time of one batch with a cold compile cache, then again with the cache warm.

    python bench/evaluator_batch_walltime.py OUT_DIR [cuda|cpu]

Reports both wall times and their ratio, measured side by side in one run, plus each kernel's verdict.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import time
from pathlib import Path

from evaluator_corpus import manifest

logger = logging.getLogger("bench.batch")


def run_batch(manifest_path: Path, out: Path, cache: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    started = time.monotonic()
    command = [
        sys.executable,
        "-m",
        "evaluator",
        "batch",
        "--manifest",
        str(manifest_path),
        "--out",
        str(out),
    ]
    subprocess.run(
        [*command, "--cache-dir", str(cache)], check=True, cwd=Path(__file__).resolve().parent.parent
    )
    return time.monotonic() - started


def verdicts(out: Path) -> list[str]:
    lines = []
    for path in sorted(out.glob("*.json")):
        if path.name == "environment.json":
            continue
        result = json.loads(path.read_text())
        verdict = "correct" if result["correct"] else (result["error"] or {}).get("kind", "incorrect")
        marks = ",".join(
            f"{flag['code']}:{flag['severity']}" for flag in result["flags"] if flag["severity"] != "info"
        )
        speed = result["speedup"]["eager"]
        lines.append(
            f"{path.stem:32s} {verdict:16s} eager={speed if speed is None else round(speed, 3)} {marks}"
        )
    return lines


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    work = Path(sys.argv[1])
    device = sys.argv[2] if len(sys.argv) > 2 else "cuda"
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    path = manifest(work / "kernels", device, cpu_sized=device == "cpu", baselines=["eager"])
    cold = run_batch(path, work / "cold", cache)
    logger.info("cold pass: %.1f s (the cached pass follows)", cold)
    warm = run_batch(path, work / "warm", cache)
    for line in verdicts(work / "warm"):
        logger.info("%s", line)
    kernels = len(json.loads(path.read_text())["kernels"])
    logger.info(
        "batch of %d kernels: cold %.1f s, cached %.1f s, cold/cached %.2f", kernels, cold, warm, cold / warm
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
