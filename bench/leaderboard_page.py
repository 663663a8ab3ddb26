"""Leaderboard benchmark: the L2 table with 1,000 entries × 13 metrics on PostgreSQL.

Measures, in one run and side by side: server time per request (median, p95) and queries per request of
the leaderboard page in its three views, a filtered page, the JSON API and the CSV export, each against a
trivial endpoint of the same stack (/api/levels) as the ratio's denominator; then requests/s of the page
and of that endpoint under a loopback load from wrk, bounded in time.

    python bench/leaderboard_page.py [--rounds 60] [--duration 10] [--database-url URL]

It uses its own database (default: leaderboard_bench on the local PostgreSQL), created and filled on
first use. The figures go to docs/performance.md by hand; nothing here asserts a time.
"""

import argparse
import contextlib
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the project's packages, bench.support

from bench.support import ensure_database, port_open  # noqa: E402
from leaderboard.embedded import free_port  # noqa: E402

DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/leaderboard_bench"
BASELINE = "/api/levels"
URLS = {
    "Fast1 page (default)": "/levels/2/",
    "fast_p page, p = 1.35": "/levels/2/?view=fastp&p=1.35",
    "geomean page": "/levels/2/?view=geomean",
    "filtered page (H100, agents, by Fast2)": "/levels/2/?hardware=H100&kind=agent&sort=-fast_2",
    "JSON API (one page)": "/api/levels/2/leaderboard",
    "CSV export (all 1,000 rows)": "/levels/2/export.csv",
    "trivial endpoint /api/levels": BASELINE,
}
LOADED_URLS = ["/levels/2/", BASELINE]

logger = logging.getLogger("bench.leaderboard")


def configure(database_url: str) -> None:
    """Point Django at the bench database with production-like settings (DEBUG off)."""
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "leaderboard.settings"
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-secret")
    os.environ.setdefault("SECURE_SSL_REDIRECT", "0")


def prepare() -> None:
    import django
    from django.core.management import call_command
    from django.db import connection

    django.setup()
    call_command("migrate", verbosity=0)
    from bench import leaderboard_fixture

    started = time.perf_counter()
    leaderboard_fixture.load()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # planner statistics as autovacuum keeps them on a live database
    logger.info("data ready in %.1f s", time.perf_counter() - started)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


class QueryClock:
    """Sums the wall time spent inside database queries (an execute wrapper)."""

    def __init__(self):
        self.spent = 0.0

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.spent += time.perf_counter() - started


STATES = ("cold", "cold, gc", "cached")
"""Each URL is timed with the table cache emptied first (cold: the table is built), likewise with the garbage
collector left running during the build ("cold, gc": the build as it was before the pause), then cached."""


@contextlib.contextmanager
def table_state(state: str):
    """Empty the table cache for a cold request; for "cold, gc", also build without pausing the collector."""
    from leaderboard.table import cache as table_cache

    if state == "cached":
        yield
        return
    table_cache.tables.clear()
    paused = table_cache.collector_paused
    if state == "cold, gc":
        table_cache.collector_paused = contextlib.nullcontext
    try:
        yield
    finally:
        table_cache.collector_paused = paused


def server_times(rounds: int) -> dict[tuple[str, str], dict]:
    """Time every URL through Django's full handler, cold and cached, interleaved round by round so they
    share the noise: wall time, this process's CPU time, and the wall time spent waiting on the database."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_HOST="127.0.0.1")
    results = {(name, state): {"times": [], "cpu": [], "db": []} for name in URLS for state in STATES}
    for name, url in URLS.items():
        for _ in range(3):
            client.get(url)
        for state in STATES:
            with table_state(state), CaptureQueriesContext(connection) as queries:
                response = client.get(url)
            if response.status_code != 200:
                raise SystemExit(f"{url} answered {response.status_code}")
            results[name, state]["queries"] = len(queries.captured_queries)
            results[name, state]["bytes"] = len(response.content)
    for _ in range(rounds):
        for name, url in URLS.items():
            for state in STATES:
                clock = QueryClock()
                with table_state(state), connection.execute_wrapper(clock):
                    started, cpu = time.perf_counter(), time.process_time()
                    client.get(url)
                    results[name, state]["times"].append(time.perf_counter() - started)
                    results[name, state]["cpu"].append(time.process_time() - cpu)
                results[name, state]["db"].append(clock.spent)
    return results


def report_server_times(results: dict[tuple[str, str], dict], rounds: int) -> None:
    base = statistics.median(results["trivial endpoint /api/levels", "cached"]["times"])
    logger.info(
        "Server time per request (Django test client, full middleware, %d rounds interleaved):", rounds
    )
    logger.info(
        "%-40s %-8s %9s %9s %9s %9s %8s %6s %10s",
        "request", "table", "median", "p95", "CPU med", "DB med", "queries", "KiB", "× trivial",
    )  # fmt: skip
    for (name, state), data in results.items():
        if name.startswith("trivial") and state != "cached":
            continue
        median = statistics.median(data["times"])
        logger.info(
            "%-40s %-8s %6.1f ms %6.1f ms %6.1f ms %6.1f ms %8d %6.0f %9.1f×",
            name,
            state,
            median * 1000,
            percentile(data["times"], 0.95) * 1000,
            statistics.median(data["cpu"]) * 1000,
            statistics.median(data["db"]) * 1000,
            data["queries"],
            data["bytes"] / 1024,
            median / base,
        )


def start_server(port: int) -> subprocess.Popen:
    command = [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if port_open(port, timeout=30):
        return server
    server.terminate()
    raise SystemExit("the server did not start")


def wrk(url: str, duration: int, connections: int) -> dict:
    command = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "--latency", url]
    output = subprocess.run(command, capture_output=True, text=True, check=True, timeout=duration + 30).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s)", output)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", output)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {
        "rate": rate,
        "p50": p50.group(0).split()[-1],
        "p99": p99.group(0).split()[-1],
        "errors": int(errors.group(1)) if errors else 0,
    }


def load_test(duration: int, connections: int) -> None:
    if shutil.which("wrk") is None:
        logger.info("wrk is not installed (apt-get install wrk): load test skipped")
        return
    port = free_port()
    server = start_server(port)
    try:
        logger.info(
            "Loopback load: wrk, %d s, %d connections, against manage.py runserver (threaded):",
            duration,
            connections,
        )
        rates = {}
        for path in LOADED_URLS:
            found = wrk(f"http://127.0.0.1:{port}{path}", duration, connections)
            rates[path] = found["rate"]
            logger.info(
                "%-22s %8.1f requests/s   latency p50 %s p99 %s   non-2xx %d",
                path,
                found["rate"],
                found["p50"],
                found["p99"],
                found["errors"],
            )
        logger.info("page / trivial endpoint throughput: %.2f", rates[LOADED_URLS[0]] / rates[BASELINE])
    finally:
        server.terminate()
        server.wait(timeout=10)


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE))
    parser.add_argument("--rounds", type=int, default=60, help="Timed requests per URL.")
    parser.add_argument("--duration", type=int, default=10, help="Seconds of wrk load per URL.")
    parser.add_argument("--connections", type=int, default=4, help="wrk connections.")
    parser.add_argument("--no-load", action="store_true", help="Skip the wrk load test.")
    args = parser.parse_args()
    configure(args.database_url)
    ensure_database(args.database_url)
    prepare()
    logger.info(
        "CPU cores: %d; load average: %s", os.cpu_count(), " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    report_server_times(server_times(args.rounds), args.rounds)
    if not args.no_load:
        load_test(args.duration, args.connections)


if __name__ == "__main__":
    main()
