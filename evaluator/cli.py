"""Command line: ``run`` evaluates one kernel file against one task; ``batch`` evaluates a manifest."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from pathlib import Path

from evaluator.policy import BASELINES, DEVICES, MODES, TOLERANCES

logger = logging.getLogger("evaluator")

EXIT_OK = 0
EXIT_HARNESS = 2


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="python -m evaluator", description=__doc__)
    root.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    commands = root.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="evaluate one kernel file against one task file")
    run.add_argument("--task", required=True, type=Path, help="KernelBench-format task file (class Model)")
    run.add_argument("--kernel", required=True, type=Path, help="kernel file defining class ModelNew")
    run.add_argument("--device", choices=DEVICES, default=None, help="default: cuda if available, else cpu")
    run.add_argument("--mode", choices=MODES, default="hardened")
    run.add_argument("--json", type=Path, help="write the result JSON here (default: stdout)")
    add_policy_options(run)
    run.add_argument("--cache-dir", type=Path, help="compile cache (default $EVALUATOR_CACHE_DIR)")

    batch = commands.add_parser("batch", help="evaluate every kernel of a manifest into a folder")
    batch.add_argument("--manifest", required=True, type=Path)
    batch.add_argument("--out", required=True, type=Path)
    batch.add_argument("--jobs", type=int, help="parallel compile workers (default: CPU cores)")
    batch.add_argument("--cache-dir", type=Path, help="compile cache (default $EVALUATOR_CACHE_DIR)")
    batch.add_argument(
        "--compile-only", action="store_true", help="only build the CUDA candidates into the cache"
    )
    return root


def add_policy_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--baselines",
        default=",".join(BASELINES),
        help="comma-separated baselines to time: eager, compile (skip compile on slow CPU runs)",
    )
    command.add_argument(
        "--tolerance",
        choices=tuple(TOLERANCES),
        default="fp32",
        help="atol = rtol: fp32 1e-4 (KernelBench now) or v0.1 1e-2 (KernelBench v0/v0.1)",
    )
    command.add_argument(
        "--trials", type=int, help="timed trials per variant (default 100 on GPU, 10 on CPU)"
    )
    command.add_argument("--warmup", type=int, help="warm-up calls per variant")
    command.add_argument("--timeout", type=float, default=600.0, help="seconds for correctness and timing")
    command.add_argument("--compile-timeout", type=float, default=900.0, help="seconds for import and build")


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def run_settings(args: argparse.Namespace):
    """The evaluation settings of a `run` command; ValueError for a bad mode, device or baseline."""
    from evaluator.batch import default_cache_dir
    from evaluator.compile_cache import CompileCache
    from evaluator.environment import collect, cuda_arch_list
    from evaluator.evaluate import Settings
    from evaluator.policy import make_policy
    from evaluator.sandbox import default_limits, sandbox_report

    device = args.device or default_device()
    baselines = tuple(name for name in args.baselines.split(",") if name)
    options = {"tolerance": args.tolerance, "trials": args.trials, "warmup": args.warmup}
    policy = make_policy(args.mode, device, baselines=baselines, **options)
    python = os.environ.get("EVALUATOR_CHILD_PYTHON") or sys.executable
    return Settings(
        policy=policy,
        compile_timeout=args.compile_timeout,
        run_timeout=args.timeout,
        cache=CompileCache(args.cache_dir or default_cache_dir()),
        arch_list=cuda_arch_list() if device == "cuda" else None,
        environment=collect(device, sandbox_report(default_limits(device), python)),
        python=python,
    )


def emit_result(result, json_path: Path | None) -> None:
    """The JSON to the file (summary on stdout), or the JSON on stdout (summary on stderr)."""
    from evaluator.result import writable

    result = writable(result)
    payload = json.dumps(result.to_dict(), indent=1, allow_nan=False)
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(payload + "\n")
        sys.stdout.write(result.summary() + "\n")
    else:
        sys.stderr.write(result.summary() + "\n")
        sys.stdout.write(payload + "\n")


def command_run(args: argparse.Namespace) -> int:
    from evaluator.evaluate import evaluate_kernel
    from evaluator.reference import TaskError, prepare_task

    for path in (args.task, args.kernel):
        if not path.is_file():
            logger.error("no such file: %s", path)
            return EXIT_HARNESS
    try:
        settings = run_settings(args)
        task = prepare_task(args.task, settings.policy)
    except (ValueError, TaskError) as error:
        logger.error("%s", error)
        return EXIT_HARNESS
    emit_result(evaluate_kernel(task, args.kernel, settings), args.json)
    return EXIT_OK


def command_batch(args: argparse.Namespace) -> int:
    from evaluator.batch import ManifestError, run_batch

    try:
        return run_batch(args.manifest, args.out, args.jobs, args.cache_dir, args.compile_only)
    except ManifestError as error:
        logger.error("%s", error)
        return EXIT_HARNESS


def stop_on_sigterm(signum, frame) -> None:
    """SIGTERM (the job stopping the harness) unwinds like an exception: children, cgroups, temp dirs go."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from evaluator.isolation import enter_private_mount_namespace, protect_process

    protect_process()
    enter_private_mount_namespace()  # first, while this process has one thread: temp dirs become tmpfs
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    logging.basicConfig(
        level=logging.INFO if args.verbose or args.command == "batch" else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.command == "run":
        return command_run(args)
    return command_batch(args)
