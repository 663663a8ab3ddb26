"""The cost of refusing hostile leaderboard JSON bundles, against parsing the same bytes, side by side.

    python bench/bundle_refusal.py [--rounds 3]

For each document (850,000 tiny keys, 760,000 keys of the kernel form, ten million empty strings, fifteen
million numbers, fifteen million escaped quotes in a string that never ends: all near the 32 MiB upload
limit) it times `check_bundle` (which counts the document's strings, values and depth before parsing,
bundles.json_shape_problem) and, for the same bytes, `json.loads` alone, the least a parse-first check
would pay, and prints the ratio. Nothing here asserts a time; the figures go to docs/performance.md
("Serving") by hand.
"""

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

import django  # noqa: E402

django.setup()

from leaderboard.submissions.bundles import BundleError, check_bundle  # noqa: E402

logger = logging.getLogger("bench.refusal")


def documents() -> dict[str, bytes]:
    kernel_keys = {f"level_1_problem_{n // 1000}_sample_{n % 1000}": "x = 1" for n in range(760_000)}
    return {
        "850,000 tiny keys": json.dumps(
            {"kernels": {f"k{n:07d}_{'x' * 20}": "y" for n in range(850_000)}}
        ).encode(),
        "760,000 kernel keys": json.dumps({"kernels": kernel_keys}).encode(),
        "10,000,000 empty strings": b'{"metadata": [' + b",".join([b'""'] * 10_000_000) + b"]}",
        "15,000,000 numbers": b'{"metadata": [' + b",".join([b"1"] * 15_000_000) + b"]}",
        "15,000,000 escaped quotes": b'{"kernels": {"a": "' + b'\\"' * 15_000_000,
    }


def best_of(rounds: int, action) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times)


def refuse(data: bytes) -> None:
    try:
        check_bundle(data, "bench.json", set(), "builtin")
    except BundleError:
        return
    raise SystemExit("the document was accepted")


def parse(data: bytes) -> None:
    with contextlib.suppress(ValueError, RecursionError):
        json.loads(data)


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logger.info("%-26s %8s %12s %12s %8s", "document", "MB", "refused in", "json.loads", "ratio")
    for name, data in documents().items():
        refused = best_of(args.rounds, lambda data=data: refuse(data))
        parsed = best_of(args.rounds, lambda data=data: parse(data))
        logger.info(
            "%-26s %8.1f %10.3f s %10.3f s %8.3f", name, len(data) / 1e6, refused, parsed, refused / parsed
        )


if __name__ == "__main__":
    main()
