"""Speed: a cold bundle of load_inline kernels through our batch and KernelBench's harness, side by side.

    python bench/evaluator_speed.py KERNELBENCH OUT_DIR [--level 2] [--problems 1-10] [--jobs N]
                                    [--passes cold,kernelbench,cached] [--timing-budget-ms MS]

KERNELBENCH is a folder holding KernelBench's problems (KernelBench/level*/) and its `kernelbench` package
(never committed here; see bench/README.md). The bundle is bench/kernelbench_bundle.py's `copy` kind: the
task's forward, then a CUDA copy kernel built with load_inline under a name of its own (one build per
kernel, as in a real bundle). Our side: `python -m evaluator batch --jobs N` on an empty cache (cold, both
baselines), then again on the same cache (cached re-verification). KernelBench's side, as its
eval_from_generations does it: every kernel built in parallel (build_compile_cache, N processes), then each
evaluated in turn by eval_kernel_against_ref (5 correctness trials, 100 cuda_event trials, its reference
timing) in one process. Order: ours cold, KernelBench's build and evaluation, ours cached (last: the figure a
stage cap may cut). Reports wall times and ratios; each of our batches also leaves its message trace
(EVALUATOR_TRACE) beside its log, from which bench/trace_stages.py tells where the time went. --passes
runs some of the three; a later `--passes cached` on the same machine and OUT_DIR reuses the cache and the
KernelBench figures of the earlier run (a device call too short for all three in one).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernelbench_bundle import numbers, write_bundle  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script from bench/: the project's packages too
logger = logging.getLogger("bench.speed")

KERNELBENCH_SIDE = """
import json, os, sys, time
from concurrent.futures import ProcessPoolExecutor
sys.path.insert(0, {source!r}); sys.path.insert(0, {bench!r})
from evaluator_agreement import provide_unused_imports
provide_unused_imports()
import torch
import kernelbench.eval as kb
pairs, build_root, jobs, stage = json.loads({pairs!r}), {build_root!r}, {jobs}, {stage!r}

def build(index):
    task, kernel = pairs[index]
    return kb.build_compile_cache(open(kernel).read(), False, os.path.join(build_root, str(index)))

def evaluate():
    rows = []
    for index, (task, kernel) in enumerate(pairs):
        started = time.monotonic()
        result = kb.eval_kernel_against_ref(
            original_model_src=open(task).read(), custom_model_src=open(kernel).read(), seed_num=42,
            num_correct_trials=5, num_perf_trials=100, measure_performance=True, timing_method="cuda_event",
            build_dir=os.path.join(build_root, str(index)), device=torch.device("cuda:0"), backend="cuda",
            precision=torch.float32)
        correct = bool(result and result.correctness)
        speedup = result.ref_runtime / result.runtime if correct and result.runtime > 0 else None
        seconds = time.monotonic() - started
        rows.append({{"kernel": kernel, "correct": correct, "speedup": speedup, "seconds": seconds}})
    return rows

if __name__ == "__main__":  # spawned build workers import this file for build() and skip this part
    started = time.monotonic()
    if stage == "build":
        import multiprocessing
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            built = list(pool.map(build, range(len(pairs))))
        built = [bool(b and b[0]) for b in built]
        print(json.dumps({{"seconds": time.monotonic() - started, "built": built}}))
    else:
        rows = evaluate()
        print(json.dumps({{"seconds": time.monotonic() - started, "rows": rows}}))
"""


def kernelbench(source: Path, pairs: list[tuple[str, str]], build_root: Path, jobs: int, stage: str) -> dict:
    code = KERNELBENCH_SIDE.format(
        source=str(source), bench=str(ROOT / "bench"), pairs=json.dumps(pairs), build_root=str(build_root),
        jobs=jobs, stage=stage,
    )  # fmt: skip
    script = build_root.parent / f"kernelbench_{stage}.py"  # a file, so that spawned workers can import it
    script.write_text(code)
    started = time.monotonic()
    command = [sys.executable, str(script)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        report = {"error": done.stderr[-2000:]}
    return {"wall_s": wall, **report}


def ours(manifest: Path, out: Path, cache: Path, jobs: int) -> dict:
    from evaluator.manifest import batch_command

    started = time.monotonic()
    command = batch_command(manifest, out, jobs=jobs, cache_dir=cache)
    env = {**os.environ, "EVALUATOR_TRACE": str(out.parent / f"{out.name}.trace")}  # every message, timed
    with open(out.parent / f"{out.name}.log", "w") as log:
        subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env, check=False)
    wall = time.monotonic() - started
    results = {
        path.stem: json.loads(path.read_text()) for path in out.glob("*.json") if path.stem != "environment"
    }
    rows = [
        {"kernel": name, "correct": r["correct"], "error": (r["error"] or {}).get("kind"),
         "speedup": r["speedup"], "durations_s": r["durations_s"]}
        for name, r in sorted(results.items())
    ]  # fmt: skip
    return {"wall_s": wall, "rows": rows}


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    parser = argparse.ArgumentParser()
    parser.add_argument("kernelbench", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--level", type=int, default=2)
    parser.add_argument("--problems", default="1-10")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--passes", default="cold,kernelbench,cached")
    parser.add_argument("--timing-budget-ms", type=float, default=None, help="our hardened timing's budget")
    args = parser.parse_args()
    passes = set(args.passes.split(","))
    args.kernelbench, args.out = args.kernelbench.resolve(), args.out.resolve()  # the batch runs elsewhere
    args.out.mkdir(parents=True, exist_ok=True)
    pairs, manifest = prepare(args)
    saved = args.out / "speed.json"
    report: dict = json.loads(saved.read_text()) if saved.exists() else {}
    report.update({"kernels": len(pairs), "jobs": args.jobs})
    if "cold" in passes:
        report["ours_cold"] = ours(manifest, args.out / "ours-cold", args.out / "ours-cache", args.jobs)
        saved.write_text(json.dumps(report, indent=1))
        judged = len(report["ours_cold"]["rows"])
        if judged < len(pairs):
            log = args.out / "ours-cold.log"
            logger.error("ours judged %d of %d kernels: see %s", judged, len(pairs), log)
            return 1
    if "kernelbench" in passes:
        for stage in ("build", "eval"):
            report[f"kernelbench_{stage}"] = kernelbench(
                args.kernelbench, pairs, args.out / "kb-build", args.jobs, stage
            )
        saved.write_text(json.dumps(report, indent=1))
    if "ours_cold" in report and "kernelbench_eval" in report:
        report["ratio_cold"] = report["ours_cold"]["wall_s"] / kernelbench_cold(report)
        logger.info("ours cold %.0f s; KernelBench %.0f s (build %.0f + eval %.0f): ratio %.2f",
                    report["ours_cold"]["wall_s"], kernelbench_cold(report),
                    report["kernelbench_build"]["wall_s"], report["kernelbench_eval"]["wall_s"],
                    report["ratio_cold"])  # fmt: skip
    if "cached" in passes:  # last, so that a stage cap cuts the least important figure
        if not any((args.out / "ours-cache").glob("*")):  # else it would time a cold pass as a cached one
            logger.error("no cache in %s: run the cold pass with the same OUT first", args.out / "ours-cache")
            return 1
        report["ours_cached"] = ours(manifest, args.out / "ours-cached", args.out / "ours-cache", args.jobs)
        if "kernelbench_eval" in report:
            report["ratio_cached"] = report["ours_cached"]["wall_s"] / kernelbench_cold(report)
            report["ratio_cached_to_kb_eval"] = (
                report["ours_cached"]["wall_s"] / report["kernelbench_eval"]["wall_s"]
            )
        logger.info("ours cached %.0f s: %s", report["ours_cached"]["wall_s"],
                    {k: round(v, 2) for k, v in report.items() if k.startswith("ratio_cached")})  # fmt: skip
    saved.write_text(json.dumps(report, indent=1))
    return 0


def prepare(args: argparse.Namespace) -> tuple[list[tuple[str, str]], Path]:
    """The bundle (a copy kernel per problem), its (task, kernel) pairs and our batch's manifest."""
    kernels = write_bundle(
        args.kernelbench, args.out / "bundle", args.level, numbers(args.problems), "copy", "speed"
    )
    tasks = {int(path.name.split("_")[3]): path for path in kernels}
    problems = {
        int(p.name.split("_", 1)[0]): p
        for p in (args.kernelbench / "KernelBench" / f"level{args.level}").glob("*.py")
    }
    pairs = [(str(problems[number]), str(path)) for number, path in sorted(tasks.items())]
    from evaluator.manifest import write_manifest

    entries = [{"id": Path(kernel).stem, "task_path": task, "kernel_path": kernel} for task, kernel in pairs]
    manifest = write_manifest(
        args.out / "manifest.json", "cuda", "hardened", entries, timing_budget_ms=args.timing_budget_ms
    )
    return pairs, manifest


def kernelbench_cold(report: dict) -> float:
    """KernelBench's harness on a cold bundle: its parallel build and its evaluation."""
    return report["kernelbench_build"]["wall_s"] + report["kernelbench_eval"]["wall_s"]


if __name__ == "__main__":
    sys.exit(main())
