"""One evaluation run inside an RQ job: claim it, write the work folder, run the harness, ingest, finish.

The harness (`python -m evaluator batch`) runs as a subprocess that dies with the job's process. Each
result file becomes a TaskResult the moment it appears, so progress is live and a re-run (after a crash,
a retry or a requeue) skips every kernel already recorded. Every step re-reads the database: a run that
was cancelled or handed to another job stops at its next heartbeat.
"""

import ctypes
import functools
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evaluator.manifest import KernelJob, batch_command, write_manifest
from leaderboard.models import EvaluationRun, Submission, TaskResult
from leaderboard.submissions import states, verified
from leaderboard.submissions.ingest import BadResult, is_harness_error, read_result, store_result
from leaderboard.submissions.public import first_error_line

logger = logging.getLogger(__name__)

Status = Submission.Status
RunStatus = EvaluationRun.Status
MAX_ATTEMPTS = 3
"""Attempts per run, RQ retries and reaper requeues together, before it is marked errored for good."""
HEARTBEAT_S = 5.0
POLL_S = 0.5
STOP_GRACE_S = 10
LOG_TAIL_CHARS = 2000
PR_SET_PDEATHSIG = 1
SECRET_VARIABLES = {"DATABASE_URL", "REDIS_URL", "SECRET_KEY"}
SECRET_NAME = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|PRIVATE|_KEY$|^PG", re.IGNORECASE)


class HarnessFailure(Exception):
    """The harness or its infrastructure failed (not the kernels): the job is retried."""


def execute_run(run_id: int, job_id: str, worker: str = "") -> str:
    """Evaluate a run to completion; return 'completed', 'failed', 'cancelled', 'superseded' or 'skipped'."""
    run = claim(run_id, job_id, worker)
    if run is None:
        return "skipped"
    folder = work_folder(run)
    ingest_available(run, folder / "out")  # results a killed attempt left behind
    pending = list(pending_kernels(run))
    if pending:
        outcome = run_harness(run, pending, folder, job_id)
        if outcome != "done":
            return outcome
    return finish(run, folder)


def claim(run_id: int, job_id: str, worker: str) -> EvaluationRun | None:
    """Mark the run running for this job, or return None if it is not this job's to run."""
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().select_related("submission").filter(pk=run_id).first()
        if run is None or run.rq_job_id != job_id:
            logger.info("run %s: job %s is not the run's current job; skipping", run_id, job_id)
            return None
        if run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            logger.info("run %s is %s; nothing to do", run_id, run.status)
            return None
        orphaned = orphan_reason(run)
        if orphaned:
            logger.info("run %s: %s; closing it", run_id, orphaned)
            close_orphan(run, orphaned)
            return None
        now = timezone.now()
        run.status, run.attempts, run.heartbeat, run.worker = RunStatus.RUNNING, run.attempts + 1, now, worker
        run.started = run.started or now
        run.save(update_fields=["status", "attempts", "heartbeat", "worker", "started"])
        if run.submission.status != Status.RUNNING:
            states.move(
                run.submission_id, Status.RUNNING, f"running on {worker or run.queue}, attempt {run.attempts}"
            )
    return run


def orphan_reason(run: EvaluationRun) -> str | None:
    """Why a queued or running run must not go on: a newer run of its submission, or a finished submission."""
    newest = run.submission.current_run
    if newest is not None and newest.pk != run.pk:
        return f"superseded by run #{newest.pk}"
    if run.submission.is_terminal:
        return f"its submission is already {run.submission.status}"
    return None


def close_orphan(run: EvaluationRun, reason: str) -> None:
    """End a run that is no longer its submission's to run; the submission's state is left as it is."""
    run.status, run.reason, run.finished = RunStatus.CANCELLED, reason, timezone.now()
    run.save(update_fields=["status", "reason", "finished"])


def work_folder(run: EvaluationRun) -> Path:
    folder = Path(settings.EVALUATOR["WORK_DIR"]) / f"run-{run.pk}"
    for name in ("tasks", "kernels", "out"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    return folder


def pending_kernels(run: EvaluationRun):
    """Kernels of the run that have no result yet."""
    return run.kernels_in_scope().select_related("task", "source").exclude(results__run=run)


def result_id(kernel) -> str:
    return f"k{kernel.pk}"


def task_text(task, device: str) -> str:
    """The problem as the harness sees it: the CPU-sized variant when evaluating on the CPU."""
    return task.cpu_source if device == "cpu" and task.cpu_source else task.source


def write_inputs(run: EvaluationRun, kernels: list, folder: Path) -> Path:
    """Write task and kernel files and the batch manifest; return the manifest's path."""
    entries = []
    for kernel in kernels:
        task_path = folder / "tasks" / f"task-{kernel.task_id}.py"
        kernel_path = folder / "kernels" / f"{result_id(kernel)}.py"
        task_path.write_text(task_text(kernel.task, run.device), encoding="utf-8")
        kernel_path.write_text(kernel.source.text, encoding="utf-8")
        entries.append(KernelJob(result_id(kernel), task_path, kernel_path))
    baselines = list(settings.EVALUATOR.get("BASELINES") or []) or None
    budget = settings.EVALUATOR.get("TIMING_BUDGET_MS")
    return write_manifest(
        folder / "manifest.json", run.device, run.mode, entries, baselines=baselines, timing_budget_ms=budget
    )


def harness_command(manifest: Path, folder: Path) -> list[str]:
    return batch_command(
        manifest,
        folder / "out",
        jobs=settings.EVALUATOR.get("JOBS") or os.cpu_count() or 1,
        cache_dir=Path(settings.EVALUATOR["WORK_DIR"]) / "cache",
        python=settings.EVALUATOR.get("PYTHON") or sys.executable,
    )


def harness_env(run: EvaluationRun) -> dict[str, str]:
    """The worker's environment without its secrets: the harness needs no database, queue or key, and
    whatever it holds, a kernel that can read its parent's /proc entries could read too."""
    env = {name: value for name, value in os.environ.items() if not is_secret_variable(name)}
    if run.device == "cpu":
        env.setdefault("TRITON_INTERPRET", "1")
    return env


def is_secret_variable(name: str) -> bool:
    return name in SECRET_VARIABLES or bool(SECRET_NAME.search(name))


def die_with_parent(parent_pid: int) -> None:
    """In the harness child (Linux): be killed when the job's process dies, however it dies; exit at once
    if it already died between the fork and this request (the signal would never come then)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent_pid:
            os._exit(1)


def run_harness(run: EvaluationRun, pending: list, folder: Path, job_id: str) -> str:
    """Run the batch over the pending kernels, ingesting results as they appear; 'done' when it finished."""
    manifest = write_inputs(run, pending, folder)
    log_path = folder / "harness.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            harness_command(manifest, folder),
            cwd=settings.BASE_DIR,
            env=harness_env(run),
            stdout=log,
            stderr=subprocess.STDOUT,
            # The job's process is single-threaded, so a preexec_fn is safe; the signal is tied to the
            # thread that forks, which is that process's only one.
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
        )
        harness_errors: list[str] = []
        try:
            outcome = watch(run, process, folder, job_id, harness_errors)
        finally:
            stop(process)
    if outcome != "done":
        return outcome
    harness_errors += ingest_available(run, folder / "out")
    check_complete(run, process.returncode, log_path, harness_errors)
    return "done"


def watch(run: EvaluationRun, process: subprocess.Popen, folder: Path, job_id: str, errors: list) -> str:
    """Poll the harness: ingest new results, beat the heartbeat, stop early if cancelled or superseded."""
    last_beat = time.monotonic()
    while True:
        exited = process.poll() is not None
        errors += ingest_available(run, folder / "out")
        if time.monotonic() - last_beat >= HEARTBEAT_S:
            last_beat = time.monotonic()
            state = beat(run, job_id)
            if state != "ok":
                logger.info("run %s: %s; stopping the harness", run.pk, state)
                return state
        if exited:
            return "done"
        time.sleep(POLL_S)


def stop(process: subprocess.Popen) -> None:
    """End the harness if it is still running: SIGTERM, then SIGKILL after a grace period."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def beat(run: EvaluationRun, job_id: str) -> str:
    """Record that the job is alive; report 'cancelled' or 'superseded' when it should stop."""
    EvaluationRun.objects.filter(pk=run.pk).update(heartbeat=timezone.now())
    fresh = EvaluationRun.objects.select_related("submission").get(pk=run.pk)
    if fresh.rq_job_id != job_id:
        return "superseded"
    if fresh.status == RunStatus.CANCELLED or fresh.submission.status == Status.CANCELLED:
        return "cancelled"
    return "ok"


def ingest_available(run: EvaluationRun, out: Path) -> list[str]:
    """Store every result file present for a kernel that has no result yet; return harness errors met.

    A result whose error is the harness's own is not stored: its file is removed so the retry evaluates
    that kernel again.
    """
    stored, harness_errors = 0, []
    for kernel in pending_kernels(run):
        path = out / f"{result_id(kernel)}.json"
        if not path.exists():
            continue
        try:
            result = read_result(path)
        except BadResult as error:
            raise HarnessFailure(str(error)) from error
        if is_harness_error(result):
            harness_errors.append(f"{kernel.file_name}: {result['error'].get('message', '')}"[:500])
            path.unlink()  # evaluated again by the retry
            continue
        store_result(run, kernel, result)
        stored += 1
    if stored:
        record_progress(run)
    read_environment(run, out)
    return harness_errors


def record_progress(run: EvaluationRun) -> None:
    done = TaskResult.objects.filter(run=run, kernel__in=run.kernels_in_scope()).count()
    Submission.objects.filter(pk=run.submission_id).update(done=done, updated=timezone.now())


def read_environment(run: EvaluationRun, out: Path) -> None:
    """Keep the harness's environment.json (GPU, driver, versions) on the run, once."""
    path = out / "environment.json"
    if run.environment or not path.exists():
        return
    try:
        environment = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    run.environment = environment if isinstance(environment, dict) else {"value": environment}
    version = run.environment.get("harness_version")
    fields = ["environment"]
    if isinstance(version, str) and version and version != run.harness_version:
        logger.warning("run %s: queued for harness %s, ran %s", run.pk, run.harness_version, version)
        run.harness_version = version
        fields.append("harness_version")
    run.save(update_fields=fields)


def log_tail(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL_CHARS:]
    except OSError:
        return ""


def check_complete(run: EvaluationRun, returncode: int, log_path: Path, harness_errors: list[str]) -> None:
    """After the harness exits: a non-zero exit, a harness error or a missing result is ours to retry.

    The failure's message becomes the public reason, so it stays generic; the details (harness errors, the
    log's tail, which may name hosts, paths and users) are kept on the run for its owner and staff.
    """
    problem = harness_problem(run, returncode, harness_errors)
    if problem:
        keep_harness_log(run, harness_errors, log_path)
        raise HarnessFailure(problem)


def harness_problem(run: EvaluationRun, returncode: int, harness_errors: list[str]) -> str | None:
    """A generic, public description of what went wrong with the harness, or None if nothing did."""
    if harness_errors:
        return f"the harness reported an error of its own for {len(harness_errors)} kernel(s)"
    if returncode != 0:
        return f"the harness exited with status {returncode}"
    missing = pending_kernels(run).count()
    if missing:
        return f"the harness exited without results for {missing} kernels"
    return None


def keep_harness_log(run: EvaluationRun, harness_errors: list[str], log_path: Path) -> None:
    """Keep a failed attempt's harness errors and log tail where only the owner and staff see them."""
    details = "\n".join([*harness_errors[:5], log_tail(log_path)]).strip()
    EvaluationRun.objects.filter(pk=run.pk).update(harness_log=details)


def judge(run: EvaluationRun) -> tuple[str, str]:
    """(run status, reason): failed when no sample-0 kernel was evaluated or none compiled, else completed."""
    results = list(TaskResult.objects.filter(run=run, kernel__sample=0))
    if not results:
        return RunStatus.FAILED, "nothing was evaluated: the submission has no sample-0 kernel"
    compiled = [r for r in results if r.compiled]
    correct = [r for r in results if r.correct]
    if not compiled:
        kinds: dict[str, int] = {}
        for result in results:
            kinds[result.error_kind or "unknown"] = kinds.get(result.error_kind or "unknown", 0) + 1
        summary = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        first = first_error_line(results[0].error_message) or "?"
        return RunStatus.FAILED, f"no kernel compiled ({summary}); first error: {first}"
    return (
        RunStatus.COMPLETED,
        f"{len(results)} kernels evaluated: {len(compiled)} compiled, {len(correct)} correct",
    )


def finish(run: EvaluationRun, folder: Path) -> str:
    """Judge the run, write verified scores if it completed, and close run and submission together."""
    read_environment(run, folder / "out")
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().select_related("submission").get(pk=run.pk)
        if run.status != RunStatus.RUNNING:
            return "skipped"
        status, reason = judge(run)
        if status == RunStatus.COMPLETED:
            verified.write_scores(run)
        run.status, run.reason, run.finished = status, reason, timezone.now()
        run.save(update_fields=["status", "reason", "finished"])
        done = TaskResult.objects.filter(run=run, kernel__in=run.kernels_in_scope()).count()
        states.move(run.submission_id, status, reason, done=done)
    logger.info("run %s %s: %s", run.pk, status, reason)
    return status


def record_infrastructure_failure(
    run_id: int, job_id: str, reason: str, final: bool, details: str = ""
) -> None:
    """An attempt failed for reasons of ours: the submission is errored (retrying, or given up, uncharged).

    `reason` is public; `details` (an error's full text), when given, are kept for the owner and staff.
    """
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().select_related("submission").filter(pk=run_id).first()
        if run is None or run.rq_job_id != job_id or run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            return
        if run.submission.is_terminal:
            return
        if details:
            run.harness_log = details[-LOG_TAIL_CHARS:]
            run.save(update_fields=["harness_log"])
        if final or run.attempts >= MAX_ATTEMPTS:
            give_up(run, reason)
            return
        run.status, run.reason = RunStatus.QUEUED, f"attempt {run.attempts} failed: {reason}"
        run.save(update_fields=["status", "reason"])
        states.move(
            run.submission_id,
            Status.ERRORED,
            f"infrastructure failure on attempt {run.attempts} of {MAX_ATTEMPTS}, retrying: {reason}",
        )


def give_up(run: EvaluationRun, reason: str) -> None:
    """Mark a run errored for good; the submission is not charged to its owner's quota."""
    message = f"infrastructure failure, gave up after {run.attempts} attempts: {reason}"
    run.status, run.reason, run.finished = RunStatus.ERRORED, message, timezone.now()
    run.save(update_fields=["status", "reason", "finished"])
    states.move(run.submission_id, Status.ERRORED, message, counts_against_quota=False)
