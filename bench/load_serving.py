"""Serving load: the production server (gunicorn with the site's config, DEBUG off) under a bounded loopback
load, on PostgreSQL and on SQLite, at two concurrencies, side by side in one run.

    python bench/load_serving.py [--duration 10] [--concurrency 8,32] [--backends postgresql,sqlite]
                                 [--page-cache on,off] [--encodings identity,gzip]
                                 [--worker-classes balanced,gthread] [--database-url URL]

Needs `wrk` (Debian: `apt-get install -y wrk`) and, for the PostgreSQL half, a local PostgreSQL (the bench
creates its own database, default serving_bench; the SQLite half uses a file of its own). Each backend is
filled once with the 1,000-entry Level 2 of bench/leaderboard_fixture.py; gunicorn runs as bin/serve runs it
(`--config python:leaderboard.serving.gunicorn_config`, one process per core x 4 threads, WEB_WORKERS and
WEB_THREADS to change that). For each URL and concurrency: requests/s, latency p50/p95/p99, errors (non-2xx
answers and socket errors), the rate as a ratio of a trivial endpoint's measured in the same run
(`/api/levels`: one query, a few bytes) and, on PostgreSQL, the most connections the server held. Tables
are cached per server process, so every URL is first requested enough times to warm each process. With
`--page-cache on,off` each backend is measured with the whole-answer cache of anonymous pages
(leaderboard/serving/page_cache.py) and without it, one after the other (the trivial endpoint is among the
cached pages, so its rate is the ceiling of each mode, not a fixed yardstick). `--encodings identity,gzip`
measures each URL twice, without and with `Accept-Encoding: gzip` (what browsers and most clients send;
hits are then replayed from the cache's gzip copy). `--worker-classes balanced,gthread` measures the site's
worker (leaderboard/serving/gunicorn_worker.py) and gunicorn's own threaded worker one after the other.
wrk runs on the same machine
and takes CPU from the server. Nothing here asserts a time; the figures go to
docs/performance.md ("Serving") by hand.
"""

import argparse
import itertools
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from urllib.request import urlopen

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the project's packages, bench.support

from bench.support import ensure_database, port_open  # noqa: E402
from leaderboard.embedded import free_port  # noqa: E402
from leaderboard.serving.sizing import web_size  # noqa: E402

DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/serving_bench"
TRIVIAL = "trivial /api/levels"
URLS = {
    TRIVIAL: "/api/levels",
    "L2 page (1,000 entries)": "/levels/2/",
    "L2 JSON API (one page)": "/api/levels/2/leaderboard",
    "L2 CSV export (1,000 rows)": "/levels/2/export.csv",
}
WRK_REPORT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("LOAD %d %d %d %d %d %d\\n", summary.requests, latency:percentile(50),
    latency:percentile(95), latency:percentile(99), e.status, e.connect + e.read + e.write + e.timeout))
end
"""
PREPARE = """
import django
django.setup()
from django.core.management import call_command
from bench import leaderboard_fixture
call_command("migrate", verbosity=0)
call_command("collectstatic", interactive=False, verbosity=0)
leaderboard_fixture.load()
"""
CONNECTIONS = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
)

logger = logging.getLogger("bench.serving")


WORKER_CLASSES = {"balanced": "", "gthread": "gthread"}  # "": the site's configured default


def environment(
    database_url: str, work: Path, port: int, page_cache: str, worker_class: str = "balanced"
) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
        "DEBUG": "0",
        "SECRET_KEY": "serving-bench-only-not-a-secret-" + "x" * 40,
        "SECURE_SSL_REDIRECT": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LEADERBOARD_VAR_DIR": str(work / "var"),
        "WEB_BIND": f"127.0.0.1:{port}",
        "PYTHONUNBUFFERED": "1",
        "LEADERBOARD_PAGE_CACHE": "1" if page_cache == "on" else "0",
        "WEB_WORKER_CLASS": WORKER_CLASSES[worker_class],
    }


def wrk(url: str, duration: int, connections: int, script: Path, encoding: str = "identity") -> dict:
    """One bounded wrk run: requests, requests/s, latency percentiles (ms) and errors."""
    command = [
        "wrk",
        f"-t{min(2, connections)}",
        f"-c{connections}",
        f"-d{duration}s",
        "-H",
        f"Accept-Encoding: {encoding}",
        "-s",
        str(script),
        url,
    ]
    output = subprocess.run(command, capture_output=True, text=True, check=True, timeout=duration + 60).stdout
    requests, p50, p95, p99, non_2xx, socket_errors = (
        int(value) for value in re.search(r"LOAD ([\d ]+)", output).group(1).split()
    )
    return {"requests": requests, "rate": requests / duration, "p50": p50 / 1000, "p95": p95 / 1000,
            "p99": p99 / 1000, "errors": non_2xx + socket_errors}  # fmt: skip


class ConnectionPeak:
    """The most connections to the bench database seen while a block runs (PostgreSQL only)."""

    def __init__(self, database_url: str | None):
        self.database_url, self.peak, self.done = database_url, 0, threading.Event()

    def sample(self) -> None:
        import psycopg

        with psycopg.connect(self.database_url, autocommit=True) as connection:
            while not self.done.wait(0.1):
                self.peak = max(self.peak, connection.execute(CONNECTIONS).fetchone()[0])

    def __enter__(self):
        self.thread = threading.Thread(target=self.sample, daemon=True) if self.database_url else None
        if self.thread:
            self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        if self.thread:
            self.thread.join()


def serve_and_measure(
    backend: str, database_url: str, args: argparse.Namespace, work: Path, page_cache: str, worker_class: str
) -> None:
    port = free_port()
    env = environment(database_url, work / backend, port, page_cache, worker_class)
    subprocess.run([sys.executable, "-c", PREPARE], cwd=ROOT, env=env, check=True, timeout=3600)
    log = (work / f"{backend}-gunicorn.log").open("wb")
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "--config",
        "python:leaderboard.serving.gunicorn_config",
        "--max-requests",
        "0",
    ]  # fmt: skip  (no process replaced mid-bench: steady state only)
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    script = work / "report.lua"
    script.write_text(WRK_REPORT)
    try:
        if not port_open(port, 60):
            raise SystemExit("gunicorn did not start")
        for path in URLS.values():
            for _ in range(4 * web_size()[0]):  # every process builds and caches its tables
                urlopen(f"http://127.0.0.1:{port}{path}", timeout=120).read()
        workers, threads = web_size()
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        logger.info("%s, page cache %s, %s worker: gunicorn %d processes x %d threads; load average %s",
                    backend, page_cache, worker_class, workers, threads, load)  # fmt: skip
        for connections in args.concurrency:
            trivial = None
            for name, path in URLS.items():
                for encoding in args.encodings:
                    url = f"http://127.0.0.1:{port}{path}"
                    with ConnectionPeak(database_url if backend == "postgresql" else None) as peak:
                        figures = wrk(url, args.duration, connections, script, encoding)
                    trivial = trivial or figures
                    held = f"  connections held {peak.peak:2d}" if backend == "postgresql" else ""
                    ratio = figures["rate"] / trivial["rate"] if trivial["rate"] else 0
                    label = f"{name} ({encoding})"
                    logger.info(
                        "  c=%-3d %-38s %s  x trivial %.2f%s", connections, label, line(figures), ratio, held
                    )
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()


def line(figures: dict) -> str:
    return (
        f"{figures['rate']:7.1f} req/s ({figures['requests']:6d})  p50 {figures['p50']:6.1f} ms  "
        f"p95 {figures['p95']:6.1f} ms  p99 {figures['p99']:6.1f} ms  errors {figures['errors']}"
    )


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE))
    parser.add_argument("--backends", default="postgresql,sqlite")
    parser.add_argument("--duration", type=int, default=10, help="Seconds of wrk load per URL.")
    parser.add_argument("--concurrency", default="8,32", help="wrk connections, comma-separated.")
    parser.add_argument("--page-cache", default="on", help="on, off or on,off: the whole-answer cache.")
    parser.add_argument("--encodings", default="identity", help="identity, gzip or identity,gzip.")
    parser.add_argument("--worker-classes", default="balanced", help="balanced, gthread or both.")
    args = parser.parse_args()
    args.encodings = args.encodings.split(",")
    args.concurrency = [int(value) for value in args.concurrency.split(",")]
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install -y wrk)")
    work = Path(tempfile.mkdtemp(prefix="serving-bench-"))
    logger.info("CPU cores: %d", os.cpu_count())
    try:
        for backend in args.backends.split(","):
            for page_cache, worker_class in itertools.product(
                args.page_cache.split(","), args.worker_classes.split(",")
            ):
                if backend == "postgresql":
                    ensure_database(args.database_url)
                    url = args.database_url
                else:
                    url = f"sqlite:///{work / 'bench.sqlite3'}"
                serve_and_measure(backend, url, args, work, page_cache, worker_class)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
