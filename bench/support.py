"""What several benchmarks share: a database of their own on the local PostgreSQL, waiting for a port."""

import logging
import socket
import time
from urllib.parse import urlparse

logger = logging.getLogger("bench")


def ensure_database(database_url: str) -> None:
    """Create the benchmark's PostgreSQL database if it does not exist yet."""
    import psycopg

    parts = urlparse(database_url)
    name = parts.path.lstrip("/")
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            logger.info("creating database %s", name)
            connection.execute(f'CREATE DATABASE "{name}"')


def port_open(port: int, timeout: float) -> bool:
    """Wait up to timeout seconds for something to accept connections on 127.0.0.1:port."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.2)
    return False
