"""The acceptance table of a bundle that went through the site: every task's verdict, speedup and memory,
and where the time went (each stage's median, the seconds beyond the timed calls).

    python bench/pipeline_acceptance.py GPU_CHECK_JSON OUT.md

GPU_CHECK_JSON is bench/submissions_gpu_report.py's gpu_check.json. For an identity bundle
(bench/kernelbench_bundle.py) the right verdict is correct and the eager speedup 1 within noise; the peak
GPU memory (both processes' reserved memory) is set beside the bound of bench/evaluator_acceptance.py.
Needs neither Django nor torch.
"""

from __future__ import annotations

import json
import logging
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.evaluator_acceptance import GiB, gpu_by_process, memory, number  # noqa: E402
from bench.round_first_calls import variants  # noqa: E402

logger = logging.getLogger("bench.pipeline_acceptance")
HEADER = (
    "| task | in GB | out GB | verdict | flags | eager ms | speedup | peak GPU GiB "
    "| candidate / reference GiB | bound GiB | peak host GiB | s |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def row(result: dict) -> dict:
    resources = result.get("resources") or {}
    gpu, host, bound = memory(resources)
    return {
        "task": result["name"],
        "in_gb": (resources.get("input_bytes") or 0) / 1e9,
        "out_gb": (resources.get("output_bytes") or 0) / 1e9,
        "verdict": "correct" if result["correct"] else result.get("error") or "not correct",
        "flags": [flag["code"] for flag in result.get("flags") or [] if flag.get("severity") != "info"],
        "eager_ms": (result.get("eager_ms") or {}).get("median"),
        "speedup": result.get("speedup_eager"),
        "gpu_gib": gpu / GiB,
        "gpu_by_process": gpu_by_process(resources),
        "bound_gib": bound / GiB,
        "host_gib": host / GiB,
        "seconds": (result.get("durations_s") or {}).get("total"),
    }


def timed_seconds(result: dict) -> float | None:
    """Seconds of the kernel's timed calls, candidate and baselines (None where its samples are missing)."""
    samples = variants(result)
    if "candidate" not in samples:
        return None
    return sum(sum(calls) for calls in samples.values()) / 1e3


def where_time_goes(results: list[dict]) -> dict:
    """Medians over the correct results: each durations_s entry, and the seconds beyond the timed calls
    (issue 11: at most 5 s for a pure-PyTorch candidate), with how many are within 5 s."""
    correct = [r for r in results if r.get("correct")]
    medians = key_medians([r.get("durations_s") or {} for r in correct], 3)
    beyond = [
        r["durations_s"]["total"] - timed
        for r in correct
        if (timed := timed_seconds(r)) is not None and "total" in (r.get("durations_s") or {})
    ]
    return {
        "durations_median_s": medians,
        "rounds_median_ms": rounds_medians(correct),
        "beyond_timed_median_s": round(statistics.median(beyond), 3) if beyond else None,
        "beyond_timed_within_5s": sum(b <= 5 for b in beyond),
        "beyond_timed_of": len(beyond),
    }


def rounds_medians(results: list[dict]) -> dict:
    """Per side, the median over the results of each entry of timing.rounds_ms (harness 2.14.0 on): the
    turns and loops on the harness's clock, the claimed calls and each phase the side's process reported."""
    went = [(r.get("timing") or {}).get("rounds_ms") or {} for r in results]
    return {
        side: key_medians([sides.get(side, {}) for sides in went], 1) for side in ("candidate", "reference")
    }


def key_medians(mappings: list[dict], digits: int) -> dict:
    """Each key's median over the mappings that have it, rounded to digits, keys in order."""
    keys = sorted({key for mapping in mappings for key in mapping})
    return {
        key: round(statistics.median(mapping[key] for mapping in mappings if key in mapping), digits)
        for key in keys
    }


def summary(rows: list[dict]) -> dict:
    speedups = [r["speedup"] for r in rows if r["verdict"] == "correct" and r["speedup"]]
    return {
        "tasks": len(rows),
        "correct": sum(r["verdict"] == "correct" for r in rows),
        "harness_errors": sum(r["verdict"] == "harness_error" for r in rows),
        "eager_speedup_within_3pct": sum(0.97 <= s <= 1.03 for s in speedups),
        "eager_speedup_within_1pct": sum(0.99 <= s <= 1.01 for s in speedups),
        "speedup_median": statistics.median(speedups) if speedups else None,
        "gpu_peak_over_bound": [r["task"] for r in rows if r["gpu_gib"] > r["bound_gib"]],
        "peak_host_gib_max": max((r["host_gib"] for r in rows), default=None),
    }


def table(rows: list[dict]) -> str:
    lines = [HEADER]
    for r in rows:
        cells = [
            r["task"], f"{r['in_gb']:.2f}", f"{r['out_gb']:.2f}", r["verdict"], " ".join(r["flags"]),
            number(r["eager_ms"]), number(r["speedup"]), f"{r['gpu_gib']:.1f}", r["gpu_by_process"],
            f"{r['bound_gib']:.1f}",
            f"{r['host_gib']:.1f}", number(r["seconds"]),
        ]  # fmt: skip
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    return "\n".join(lines)


def main(source: Path, target: Path) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sections = []
    for submission in json.loads(source.read_text()):
        rows = sorted((row(r) for r in submission["results"]), key=lambda r: int(r["task"].split("_")[0]))
        facts = json.dumps({**summary(rows), **where_time_goes(submission["results"])}, indent=1)
        title = f"Submission {submission['submission']} (level {submission['level']})"
        sections.append(f"{title}:\n\n{table(rows)}")
        sections.append(f"```\n{facts}\n```")
        logger.info("submission %s: %s", submission["submission"], facts)
    target.write_text("\n\n".join(sections) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
