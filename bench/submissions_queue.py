"""Benchmark of the submission queue: pick-up latency, full-bundle wall time, and draining 1,000 submissions.

Run against a scratch database and a scratch Redis database (default: a temporary SQLite file and Redis
database 11, which is emptied first):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/submissions_bench REDIS_URL=redis://127.0.0.1:6379/11 \
        .venv/bin/python bench/submissions_queue.py [--drain 1000] [--latency 20]

Everything is measured side by side in one run and reported as ratios:
- pick-up latency: commit of the upload → the job claiming the run, with an idle worker;
- full bundle: the real harness alone (`python -m evaluator batch`) vs the same kernels through the whole
  pipeline (API-level upload, queue, worker, ingestion, scores), on the CPU;
- drain: N queued submissions whose results are already recorded (the resume path: the job claims the run,
  finds every result, aggregates and completes) drained by 1 worker, then by 2; every one must complete.
"""

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
WORK = Path(tempfile.mkdtemp(prefix="submissions-bench-"))
os.environ["EVALUATOR_WORK_DIR"] = str(WORK / "work")
os.environ.setdefault("DATABASE_URL", f"sqlite:///{WORK / 'bench.sqlite3'}")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/11")

import django  # noqa: E402
import django_rq  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402

from leaderboard.models import EvaluationRun, Hardware, Level, Score, Submission  # noqa: E402
from leaderboard.submissions.ingest import store_result  # noqa: E402
from leaderboard.submissions.intake import EntryDetails, submit_bundle  # noqa: E402
from tasks.models import Task  # noqa: E402
from tests.submissions.samples import (  # noqa: E402
    BROKEN_KERNEL,
    RELU_TASK,
    RESULTS,
    TORCH_RELU_KERNEL,
    TRITON_RELU_KERNEL,
    kernel_name,
    zip_bytes,
)

logger = logging.getLogger("bench.submissions")
SUITE = "submissions-bench"


def prepare_database() -> None:
    """Empty the scratch Redis database, migrate the scratch database and add three tasks of its own suite."""
    django_rq.get_connection("cpu").flushdb()
    call_command("migrate", verbosity=0)
    if Submission.objects.exists():
        raise SystemExit("the database already holds submissions: point DATABASE_URL at a scratch database")
    level = Level.objects.get(number=1)
    for problem_id in (1, 2, 3):
        defaults = {"name": f"{problem_id}_ReLU", "content_hash": f"bench-{problem_id}", "source": RELU_TASK}
        Task.objects.get_or_create(suite=SUITE, level=level, problem_id=problem_id, defaults=defaults)


def bench_user():
    user, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_staff": True})
    return user


def details(method: str) -> EntryDetails:
    return EntryDetails(method_name=method, hardware=Hardware.objects.get(name="CPU"), suite=SUITE)


def start_worker(log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "manage.py", "evaluation_worker", "cpu"], cwd=ROOT, env=env, stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip


def stop(workers: list[subprocess.Popen]) -> None:
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.wait(timeout=60)


def submit_resumable(count: int, method: str) -> list[int]:
    """Queue `count` one-kernel submissions whose result is already stored (the job's resume path)."""
    result = json.loads((RESULTS / "torch_relu_correct.json").read_text())
    ids = []
    for n in range(count):
        data = zip_bytes({kernel_name(1, 1 + n % 3): TORCH_RELU_KERNEL + f"# {method} {n}\n"})
        with transaction.atomic():
            [submission] = submit_bundle(bench_user(), data, f"{n}.zip", details(method))
            store_result(submission.current_run, submission.kernels.get(), result)
        ids.append(submission.pk)
    return ids


def wait_finished(ids: list[int], timeout: float) -> float:
    """Seconds until every submission is finished; raises if any is still pending at the timeout."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        pending = Submission.objects.filter(pk__in=ids).exclude(status__in=Submission.TERMINAL).count()
        if not pending:
            return time.monotonic() - start
        time.sleep(0.2)
    raise RuntimeError(f"{pending} submissions unfinished after {timeout} s")


def measure_latency(samples: int) -> list[float]:
    """Seconds from the upload's commit to the job claiming its run, one submission at a time."""
    workers = [start_worker(WORK / "latency-worker.log")]
    time.sleep(3)  # the worker is up and idle
    latencies = []
    try:
        for _ in range(samples):
            [pk] = submit_resumable(1, "latency")
            committed = time.time()
            wait_finished([pk], 60)
            run = EvaluationRun.objects.get(submission_id=pk)
            latencies.append(run.started.timestamp() - committed)
    finally:
        stop(workers)
    return latencies


def measure_drain(count: int, worker_count: int) -> tuple[float, int]:
    """(seconds, completed) for `count` queued submissions drained by `worker_count` workers."""
    ids = submit_resumable(count, f"drain-{worker_count}")
    workers = [start_worker(WORK / f"drain-{worker_count}-{i}.log") for i in range(worker_count)]
    try:
        seconds = wait_finished(ids, timeout=count * 5)
    finally:
        stop(workers)
    completed = Submission.objects.filter(pk__in=ids, status="completed").count()
    scored = Score.objects.filter(run__submission_id__in=ids).values("run").distinct().count()
    if completed != count or scored != count:
        raise RuntimeError(f"lost submissions: {completed} completed, {scored} scored of {count}")
    return seconds, completed


def harness_alone() -> float:
    """Seconds for `python -m evaluator batch` on the bundle's three kernels, nothing else."""
    folder = WORK / "alone"
    kernels = {"triton": TRITON_RELU_KERNEL, "torch": TORCH_RELU_KERNEL, "broken": BROKEN_KERNEL}
    (folder / "out").mkdir(parents=True)
    (folder / "task.py").write_text(RELU_TASK)
    entries = []
    for name, text in kernels.items():
        (folder / f"{name}.py").write_text(text)
        entries.append(
            {"id": name, "task_path": str(folder / "task.py"), "kernel_path": str(folder / f"{name}.py")}
        )
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps({"device": "cpu", "mode": settings.EVALUATOR["MODE"], "kernels": entries}))
    out, cache = str(folder / "out"), str(folder / "cache")
    command = [
        sys.executable,
        "-m",
        "evaluator",
        "batch",
        "--manifest",
        str(manifest),
        "--out",
        out,
        "--cache-dir",
        cache,
    ]
    start = time.monotonic()
    subprocess.run(
        command, cwd=ROOT, check=True, capture_output=True, env={**os.environ, "TRITON_INTERPRET": "1"}
    )
    return time.monotonic() - start


def full_bundle() -> float:
    """Seconds from upload to completion of the same three kernels through the pipeline."""
    data = zip_bytes(
        {
            kernel_name(1, 1): TRITON_RELU_KERNEL,
            kernel_name(1, 2): TORCH_RELU_KERNEL,
            kernel_name(1, 3): BROKEN_KERNEL,
        }
    )
    workers = [start_worker(WORK / "bundle-worker.log")]
    time.sleep(3)
    try:
        start = time.monotonic()
        [submission] = submit_bundle(bench_user(), data, "bundle.zip", details("full-bundle"))
        wait_finished([submission.pk], 900)
        seconds = time.monotonic() - start
    finally:
        stop(workers)
    submission.refresh_from_db()
    if submission.status != "completed":
        raise RuntimeError(f"the bundle ended {submission.status}: {submission.reason}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drain", type=int, default=1000, help="Submissions to drain (default 1000).")
    parser.add_argument("--latency", type=int, default=20, help="Pick-up latency samples (default 20).")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    prepare_database()
    logger.info("database %s, redis %s", settings.DATABASES["default"]["ENGINE"], settings.REDIS_URL)
    try:
        latencies = measure_latency(args.latency)
        logger.info(
            "pick-up latency over %d: median %.3f s, min %.3f s, max %.3f s",
            len(latencies), statistics.median(latencies), min(latencies), max(latencies),
        )  # fmt: skip
        alone, pipeline = harness_alone(), full_bundle()
        logger.info("3-kernel bundle on CPU: harness alone %.1f s, whole pipeline %.1f s, ratio %.2f",
                    alone, pipeline, pipeline / alone)  # fmt: skip
        one, _ = measure_drain(args.drain, 1)
        two, _ = measure_drain(args.drain, 2)
        logger.info(
            "drain %d: 1 worker %.1f s (%.1f jobs/s), 2 workers %.1f s (%.1f jobs/s), ratio %.2f; none lost",
            args.drain, one, args.drain / one, two, args.drain / two, one / two,
        )  # fmt: skip
    finally:
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
