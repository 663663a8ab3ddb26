"""Load under evaluation: the leaderboard and the API under a bounded loopback load, idle and while a worker
evaluates a bundle on this machine's CPU, side by side in one run.

    python bench/load_evaluation.py [--duration 10] [--connections 4] [--database-url URL] [--redis-db 14]

It uses its own PostgreSQL database (default load_bench, created and filled on first use: Level 2 with
the 1,000-entry bench fixture, the built-in tasks) and a Redis database of its own (default 14, emptied
first). The web server is `manage.py runserver` with DEBUG off; the load is `wrk` (apt-get install wrk),
a fixed number of connections for a fixed time per URL. For every URL it reports requests/s, latency
p50/p95/p99 and errors (non-2xx responses and socket errors), idle and then while the worker evaluates a
four-kernel bundle (both baselines, so the worker stays busy), and the ratio of the two p95s. Nothing
here asserts a time; the figures go to docs/performance.md ("Load under evaluation") by hand.
"""

import argparse
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.request import Request, urlopen

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the project's packages, bench.support

from bench.support import ensure_database, port_open  # noqa: E402
from leaderboard.embedded import free_port  # noqa: E402

DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/load_bench"
WRK_REPORT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("LOAD %d %d %d %d %d %d\\n", summary.requests, latency:percentile(50),
    latency:percentile(95), latency:percentile(99), e.status, e.connect + e.read + e.write + e.timeout))
end
"""

logger = logging.getLogger("bench.load")


def environment(database_url: str, redis_db: int, work: Path) -> dict[str, str]:
    """What every process of the bench runs with: its database and Redis, production-like settings."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": f"redis://127.0.0.1:6379/{redis_db}",
        "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
        "DEBUG": "0",
        "SECRET_KEY": "load-bench-only-not-a-secret-" + "x" * 40,
        "SECURE_SSL_REDIRECT": "0",
        "EVALUATOR_WORK_DIR": str(work / "evaluator"),
        "EVALUATOR_DEVICE": "cpu",
        "LEADERBOARD_VAR_DIR": str(work / "var"),
        "PYTHONUNBUFFERED": "1",
    }


PREPARE = """
import django, json, sys
django.setup()
import django_rq
from django.contrib.auth import get_user_model
from django.core.management import call_command
from bench import leaderboard_fixture
from leaderboard.submissions.tokens import issue_token
call_command("migrate", verbosity=0)
call_command("import_tasks", "--builtin", verbosity=0)
leaderboard_fixture.load()
django_rq.get_connection("cpu").flushdb()
user, _ = get_user_model().objects.get_or_create(username="load-bench", defaults={"is_staff": True})
print(json.dumps({"token": issue_token(user, name="load bench")[1]}))
"""


def prepare(env: dict[str, str]) -> str:
    """Migrate and fill the bench database, empty its Redis database; return an API token."""
    command = [sys.executable, "-c", PREPARE]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=1800
    )
    return json.loads(done.stdout.splitlines()[-1])["token"]


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("wb") as handle:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT)


def wait_for_port(port: int, timeout: float = 60) -> None:
    if not port_open(port, timeout):
        raise SystemExit("the web server did not start")


def bundle() -> bytes:
    """Four CPU kernels of level 1 of the built-in suite (Triton and PyTorch), as a runs/ zip."""
    sys.path.insert(0, str(ROOT))
    from tests.submissions.samples import TORCH_GELU_KERNEL, TRITON_RELU_KERNEL, kernel_name, zip_bytes

    return zip_bytes(
        {
            "runs/load/" + kernel_name(1, 9): TRITON_RELU_KERNEL,
            "runs/load/" + kernel_name(1, 7): TORCH_GELU_KERNEL,
            "runs/load/" + kernel_name(1, 1): torch_kernel(
                "torch.mm(a.contiguous(), b.contiguous())", "a, b"
            ),
            "runs/load/" + kernel_name(1, 3): torch_kernel("torch.softmax(x, dim=1)", "x"),
        }
    )


def torch_kernel(expression: str, arguments: str) -> str:
    """A KernelBench kernel file whose forward is one PyTorch expression."""
    return (
        "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        f"    def forward(self, {arguments}):\n        return {expression}\n"
    )


def submit(port: int, token: str) -> int:
    """POST the bundle to the API as multipart; return the submission id."""
    boundary = "loadbench" + os.urandom(8).hex()
    fields = {"method": "Load bench", "hardware": "CPU"}
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
        for k, v in fields.items()
    ]
    head = "".join(parts) + (
        f'--{boundary}\r\nContent-Disposition: form-data; name="bundle"; filename="load.zip"\r\n'
        "Content-Type: application/zip\r\n\r\n"
    )
    body = head.encode() + bundle() + f"\r\n--{boundary}--\r\n".encode()
    request = Request(f"http://127.0.0.1:{port}/api/submissions", data=body, method="POST")
    request.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
    request.add_header("Authorization", f"Bearer {token}")
    with urlopen(request, timeout=60) as response:
        return json.loads(response.read())["id"]


def status(port: int, submission: int) -> dict:
    with urlopen(f"http://127.0.0.1:{port}/api/submissions/{submission}", timeout=30) as response:
        return json.loads(response.read())


def wrk(url: str, duration: int, connections: int, script: Path) -> dict:
    """One bounded wrk run: requests/s, latency percentiles (ms) and errors."""
    command = ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "-s", str(script), url]
    output = subprocess.run(command, capture_output=True, text=True, check=True, timeout=duration + 60).stdout
    numbers = [int(value) for value in re.search(r"LOAD ([\d ]+)", output).group(1).split()]
    requests, p50, p95, p99, non_2xx, socket_errors = numbers
    return {
        "rate": requests / duration,
        "p50": p50 / 1000,
        "p95": p95 / 1000,
        "p99": p99 / 1000,
        "errors": non_2xx + socket_errors,
    }


def urls(submission: int) -> dict[str, str]:
    return {
        "L2 leaderboard page (1,000 entries)": "/levels/2/",
        "L2 JSON API (one page)": "/api/levels/2/leaderboard",
        "submission status API": f"/api/submissions/{submission}",
        "trivial endpoint /api/levels": "/api/levels",
    }


def measure(port: int, paths: dict[str, str], duration: int, connections: int, script: Path) -> dict:
    found = {}
    for name, path in paths.items():
        found[name] = wrk(f"http://127.0.0.1:{port}{path}", duration, connections, script)
        logger.info("  %-38s %s", name, line(found[name]))
    return found


def line(figures: dict) -> str:
    return (
        f"{figures['rate']:7.1f} req/s  p50 {figures['p50']:7.1f} ms  p95 {figures['p95']:7.1f} ms  "
        f"p99 {figures['p99']:7.1f} ms  errors {figures['errors']}"
    )


def run(args: argparse.Namespace, work: Path) -> None:
    env = environment(args.database_url, args.redis_db, work)
    ensure_database(args.database_url)
    token = prepare(env)
    script = work / "report.lua"
    script.write_text(WRK_REPORT)
    port = free_port()
    server = start(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        env,
        work / "server.log",
    )
    worker = None
    try:
        wait_for_port(port)
        submission = submit(port, token)  # queued, no worker yet: the idle phase sees a queued status
        for path in urls(submission).values():
            urlopen(f"http://127.0.0.1:{port}{path}", timeout=120).read()  # warm the table cache
        logger.info(
            "CPU cores: %d; load average %s", os.cpu_count(), " ".join(f"{x:.2f}" for x in os.getloadavg())
        )
        logger.info(
            "Idle (no evaluation), wrk %d s × %d connections per URL:", args.duration, args.connections
        )
        idle = measure(port, urls(submission), args.duration, args.connections, script)
        worker = start([sys.executable, "manage.py", "evaluation_worker", "cpu"], env, work / "worker.log")
        started = time.monotonic()
        while status(port, submission)["status"] != "running" and time.monotonic() - started < 120:
            time.sleep(0.5)
        logger.info("While the worker evaluates the bundle (%s):", status(port, submission)["status"])
        loaded = measure(port, urls(submission), args.duration, args.connections, script)
        state = status(port, submission)
        logger.info(
            "The bundle after the loaded phase: %s, %s of %s kernels",
            state["status"],
            state["done"],
            state["total"],
        )
        logger.info("p95 under evaluation / idle:")
        for name in idle:
            logger.info("  %-38s %.2f", name, loaded[name]["p95"] / idle[name]["p95"])
        while not status(port, submission)["final"] and time.monotonic() - started < 1800:
            time.sleep(2)
        final = status(port, submission)
        logger.info(
            "The bundle: %s (%s); evaluated in %.0f s",
            final["status"],
            final["reason"],
            time.monotonic() - started,
        )
        server_errors = (work / "server.log").read_text(errors="replace").count('" 500 ')
        logger.info("HTTP 500 answers in the server log: %d", server_errors)
    finally:
        for process in filter(None, (worker, server)):
            process.terminate()
            process.wait(timeout=30)


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE))
    parser.add_argument("--redis-db", type=int, default=14, help="Redis database of the bench (emptied).")
    parser.add_argument("--duration", type=int, default=10, help="Seconds of wrk load per URL and phase.")
    parser.add_argument("--connections", type=int, default=4, help="wrk connections.")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    work = Path(tempfile.mkdtemp(prefix="load-bench-"))
    try:
        run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
