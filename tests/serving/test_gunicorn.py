"""The production server as bin/serve runs it (gunicorn with the site's config, DEBUG off), in a real
process: huge bodies refused without growing it, static files served, database connections bounded."""

import concurrent.futures
import http.client
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.db import connection

from leaderboard.submissions.tokens import issue_token
from tests.serving.processes import Gunicorn, send_body
from tests.submissions.processes import session_members

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

logger = logging.getLogger(__name__)
GiB = 1 << 30
MB = 1_000_000


@pytest.fixture
def server(tmp_path):
    started = Gunicorn(tmp_path, workers=1, threads=4)
    started.collectstatic()
    yield started.start()
    started.stop()


def get(url: str) -> tuple[int, bytes, dict]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


class PeakMemory:
    """Samples the server's resident memory in a thread; the peak is kept."""

    def __init__(self, server: Gunicorn):
        self.server, self.peak, self.done = server, server.rss_bytes(), threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self):
        while not self.done.wait(0.05):
            self.peak = max(self.peak, self.server.rss_bytes())

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()


MULTIPART = {"Content-Type": "multipart/form-data; boundary=xyz"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
BODIES = [
    ("/api/submissions", MULTIPART, False, b"401"),
    ("/api/submissions", MULTIPART, True, b"413"),
    ("/accounts/login/", FORM, False, b"413"),
    ("/accounts/login/", MULTIPART, False, b"413"),
    ("/submit/", MULTIPART, False, b"403"),
]


@pytest.mark.parametrize(("path", "headers", "with_token", "status"), BODIES)
def test_a_gigabyte_body_is_answered_without_growing_the_server(
    server, path, headers, with_token, status, django_user_model
):
    """The body is never read: the answer comes from the headers (no token: 401; a token: over the bundle
    limit, 413; the login form: over the form-field limit, 413; the upload form: its upload handler refuses
    the body unread, so no CSRF token is found, 403) and gunicorn closes the connection, reading no more."""
    if with_token:
        user = django_user_model.objects.create_user("big", password="a-long-password-1")
        headers = {**headers, "Authorization": f"Bearer {issue_token(user)[1]}"}
    for _ in range(3):
        assert get(server.url + "/levels/2/")[0] == 200  # warm: the page built, the workers settled
    before = server.rss_bytes()
    with PeakMemory(server) as memory:
        answers = []
        threads = [
            threading.Thread(target=lambda: answers.append(send_body(server.url, path, GiB, headers)))
            for _ in range(3)  # three at once
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=180)
    assert len(answers) == 3
    for answer, _sent in answers:
        assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]
    logger.info("%s: resident memory %d MB before, %d MB at most during", path, before / MB, memory.peak / MB)
    assert memory.peak - before < 50 * MB, (before, memory.peak)
    assert get(server.url + "/healthz")[0] == 200  # and it still serves


def test_static_files_are_served_by_the_application_with_debug_off(server):
    status, body, headers = get(server.url + "/static/css/site.css")
    assert status == 200
    assert b"{" in body
    assert headers["Content-Type"].startswith("text/css")
    request = urllib.request.Request(server.url + "/static/vendor/chart.js/chart.umd.js")
    request.add_header("Accept-Encoding", "gzip")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.headers["Content-Encoding"] == "gzip"  # compressed by collectstatic
    page = get(server.url + "/levels/2/")[1].decode()
    assert "/static/css/site.css" in page


def database_connections() -> int:
    """Connections to the tests' database other than this process's own."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def test_connections_stay_within_workers_times_threads_under_load(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("counts PostgreSQL connections (pg_stat_activity)")
    workers, threads = 2, 4
    server = Gunicorn(tmp_path, workers=workers, threads=threads).start()
    try:
        urls = [f"{server.url}/levels/2/", f"{server.url}/api/levels/2/leaderboard", f"{server.url}/healthz"]
        statuses, peak = [], 0
        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            pending = [pool.submit(get, urls[n % len(urls)]) for n in range(2000)]
            while not all(future.done() for future in pending):
                peak = max(peak, database_connections())
                time.sleep(0.1)
            statuses = [future.result()[0] for future in pending]
        assert statuses.count(200) == 2000, {code: statuses.count(code) for code in set(statuses)}
        assert peak <= workers * threads, peak
        assert database_connections() <= workers * threads
    finally:
        server.stop()


def established_sockets(port: int) -> set[str]:
    """Inodes of the server side of established TCP connections on this port (IPv4 loopback)."""
    inodes = set()
    for row in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = row.split()
        if int(fields[1].split(":")[1], 16) == port and fields[3] == "01":
            inodes.add(fields[9])
    return inodes


def connections_per_worker(server: Gunicorn) -> list[int]:
    """How many of the server's established connections each worker process holds."""
    inodes = established_sockets(server.port)
    counts = []
    for pid in session_members(server.process.pid):
        if pid == server.process.pid:
            continue
        try:
            links = [os.readlink(entry) for entry in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue
        counts.append(sum(link.removeprefix("socket:[").removesuffix("]") in inodes for link in links))
    return sorted(counts)


def keep_asking(port: int, until: float, statuses: list[int]) -> None:
    """One keep-alive connection asking for the Level 2 page until `until`."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while time.monotonic() < until:
        connection.request("GET", "/levels/2/")
        response = connection.getresponse()
        response.read()
        statuses.append(response.status)
    connection.close()


def test_connections_opened_at_once_are_shared_between_the_workers(tmp_path):
    """16 keep-alive connections opened together (as a browser or a load test does): each of 2 processes
    takes a fair part of them, where gunicorn's own threaded worker often lets one process take all."""
    server = Gunicorn(tmp_path, workers=2, threads=2, LEADERBOARD_PAGE_CACHE="0").start()
    try:
        for _ in range(8):
            assert get(server.url + "/levels/2/")[0] == 200  # both processes build their tables
        statuses: list[int] = []
        until = time.monotonic() + 6
        threads = [
            threading.Thread(target=keep_asking, args=(server.port, until, statuses)) for _ in range(16)
        ]
        for thread in threads:
            thread.start()
        time.sleep(3)
        held = connections_per_worker(server)
        for thread in threads:
            thread.join(timeout=120)
        assert set(statuses) == {200}
        assert sum(held) == 16, held
        assert held[0] >= 4, held  # a fair share is 8 each; stock gthread often gives [0, 16]
    finally:
        server.stop()
