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
    command.add_argument(
        "--timing-budget-ms",
        type=float,
        help="hardened: cut the timed calls per variant to those that fill this many ms (at least 2 rounds; "
        "default 1000 on a GPU, 0 for none)",
    )
    command.add_argument(
        "--round-calls",
        type=int,
        help="hardened: calls per variant in every round before the sides alternate (default: on a GPU as "
        "many as fill about 250 ms, 4 to 20; 5 on the CPU)",
    )
    command.add_argument("--timeout", type=float, default=600.0, help="seconds for correctness and timing")
    command.add_argument("--compile-timeout", type=float, default=900.0, help="seconds for import and build")


def default_device() -> str:
    from evaluator.trusted.environment import nvidia_smi

    return "cuda" if os.environ.get("CUDA_VISIBLE_DEVICES") != "" and nvidia_smi() else "cpu"


def run_manifest(args: argparse.Namespace, folder: Path) -> Path:
    """`run` as a batch of one: the same path as the worker's (a manifest, a reference process, a child)."""
    from evaluator.manifest import write_manifest

    baselines = [name for name in args.baselines.split(",") if name]
    options = {
        "baselines": baselines,
        "tolerance": args.tolerance,
        "trials": args.trials,
        "warmup": args.warmup,
        "timing_budget_ms": args.timing_budget_ms,
        "round_calls": args.round_calls,
    }
    options.update({"run_timeout": args.timeout, "compile_timeout": args.compile_timeout})
    kernel = {
        "id": "kernel",
        "task_path": str(args.task.resolve()),
        "kernel_path": str(args.kernel.resolve()),
    }
    return write_manifest(
        folder / "manifest.json", args.device or default_device(), args.mode, [kernel], **options
    )


def emit_result(result, json_path: Path | None) -> None:
    """The JSON to the file (summary on stdout), or the JSON on stdout (summary on stderr)."""
    payload = json.dumps(result.to_dict(), indent=1, allow_nan=False)
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(payload + "\n")
        sys.stdout.write(result.summary() + "\n")
    else:
        sys.stderr.write(result.summary() + "\n")
        sys.stdout.write(payload + "\n")


def command_run(args: argparse.Namespace) -> int:
    import tempfile

    from evaluator.manifest import ManifestError
    from evaluator.result import Result
    from evaluator.trusted.batch import run_batch

    for path in (args.task, args.kernel):
        if not path.is_file():
            logger.error("no such file: %s", path)
            return EXIT_HARNESS
    with tempfile.TemporaryDirectory(prefix="kb-run-") as folder:
        try:
            manifest = run_manifest(args, Path(folder))
            run_batch(manifest, Path(folder) / "out", 1, args.cache_dir)
        except (ManifestError, ValueError) as error:
            logger.error("%s", error)
            return EXIT_HARNESS
        result = Result.from_dict(json.loads((Path(folder) / "out" / "kernel.json").read_text()))
    if (
        result.error
        and result.error.kind == "harness_error"
        and result.error.message.startswith("the task is broken")
    ):
        logger.error("%s", result.error.message)
        return EXIT_HARNESS
    emit_result(result, args.json)
    return EXIT_OK


def command_batch(args: argparse.Namespace) -> int:
    from evaluator.manifest import ManifestError
    from evaluator.trusted.batch import run_batch
    from evaluator.trusted.settings import SettingsError

    try:
        return run_batch(args.manifest, args.out, args.jobs, args.cache_dir, args.compile_only)
    except (ManifestError, SettingsError) as error:
        logger.error("%s", error)
        return EXIT_HARNESS


def stop_on_sigterm(signum, frame) -> None:
    """SIGTERM (the job stopping the harness) unwinds like an exception: children, cgroups, temp dirs go."""
    raise SystemExit(128 + signum)


def trace_to(path: str | None) -> None:
    """EVALUATOR_TRACE=FILE: every message between the harness and its children, timestamped, to FILE."""
    if not path:
        return
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(relativeCreated).1f %(threadName)s %(message)s"))
    trace = logging.getLogger("evaluator.trace")
    trace.addHandler(handler)
    trace.setLevel(logging.DEBUG)
    trace.propagate = False


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from evaluator.sandbox.isolation import enter_private_mount_namespace, protect_process

    protect_process()
    enter_private_mount_namespace()  # first, while this process has one thread: temp dirs become tmpfs
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    logging.basicConfig(
        level=logging.INFO if args.verbose or args.command == "batch" else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    trace_to(os.environ.get("EVALUATOR_TRACE"))
    if args.command == "run":
        return command_run(args)
    return command_batch(args)
