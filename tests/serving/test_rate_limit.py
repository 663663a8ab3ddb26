"""The read-API rate limit: GETs of /api/* per client address and window, 429 with Retry-After past it."""

import pytest
from django.core.cache import cache

from leaderboard.serving.ratelimit import hit

pytestmark = pytest.mark.django_db
CLIENT = {"REMOTE_ADDR": "198.51.100.4"}


@pytest.fixture(autouse=True)
def small_limit(settings):
    settings.API_READ_RATE_LIMIT = 3
    settings.API_READ_RATE_WINDOW_S = 60
    cache.clear()
    yield settings
    cache.clear()


def test_an_address_past_its_reads_gets_429_with_retry_after(client):
    assert [client.get("/api/levels", **CLIENT).status_code for _ in range(3)] == [200, 200, 200]
    refused = client.get("/api/levels/2/leaderboard", **CLIENT)
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert "at most 3 every 60 s" in refused.json()["error"]
    assert client.get("/api/levels", REMOTE_ADDR="10.0.0.2").status_code == 200  # another address


def test_only_api_reads_count(client):
    for _ in range(5):
        assert client.get("/changes/", **CLIENT).status_code == 200
        assert client.post("/api/submissions", **CLIENT).status_code == 401  # refused, but not counted
    assert client.get("/api/levels", **CLIENT).status_code == 200


def test_a_limit_of_zero_turns_it_off(client, settings):
    settings.API_READ_RATE_LIMIT = 0
    assert {client.get("/api/levels", **CLIENT).status_code for _ in range(6)} == {200}


def test_behind_the_proxy_the_forwarded_client_counts_and_the_host_itself_does_not(client):
    proxied = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "10.9.9.9, 203.0.113.5"}
    assert [client.get("/api/levels", **proxied).status_code for _ in range(4)] == [200, 200, 200, 429]
    other = {**proxied, "HTTP_X_FORWARDED_FOR": "10.9.9.9, 203.0.113.6"}  # its last hop is the client
    assert client.get("/api/levels", **other).status_code == 200
    assert {client.get("/api/levels", REMOTE_ADDR="127.0.0.1").status_code for _ in range(5)} == {200}
    spoofed = {"REMOTE_ADDR": "198.51.100.9", "HTTP_X_FORWARDED_FOR": "203.0.113.7"}  # not from the proxy
    assert [client.get("/api/levels", **spoofed).status_code for _ in range(4)][-1] == 429


def test_counts_start_again_in_each_window():
    assert hit("192.0.2.7", 60, now=120.0) == (1, 60)
    assert hit("192.0.2.7", 60, now=150.5) == (2, 30)
    assert hit("192.0.2.8", 60, now=150.5) == (1, 30)
    assert hit("192.0.2.7", 60, now=180.0) == (1, 60)
