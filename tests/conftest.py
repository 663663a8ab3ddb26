"""Shared test set-up: a Redis database of the tests' own, and common fixtures."""

import os
from urllib.parse import urlparse, urlunparse

import pytest
import redis

TEST_REDIS_DB = int(os.environ.get("LEADERBOARD_TEST_REDIS_DB", 15))


def test_redis_url(url: str) -> str:
    """The same Redis server as url, on the database reserved for tests."""
    return urlunparse(urlparse(url)._replace(path=f"/{TEST_REDIS_DB}"))


def pytest_configure(config):
    from django.conf import settings

    url = test_redis_url(settings.REDIS_URL)
    os.environ["REDIS_URL"] = url  # worker subprocesses started by tests inherit it
    settings.REDIS_URL = url
    settings.RQ_QUEUES = {name: {**queue, "URL": url} for name, queue in settings.RQ_QUEUES.items()}


@pytest.fixture
def redis_conn():
    """A connection to the tests' Redis database, emptied before and after the test."""
    from django.conf import settings

    connection = redis.Redis.from_url(settings.REDIS_URL)
    connection.flushdb()
    yield connection
    connection.flushdb()


def pytest_collection_modifyitems(items):
    """Refuse serialized rollbacks: reference data comes back after each flush through post_migrate, and
    mixing serialized and plain transactional tests makes Django re-insert rows that already exist."""
    for item in items:
        marker = item.get_closest_marker("django_db")
        if marker and marker.kwargs.get("serialized_rollback"):
            raise pytest.UsageError(f"{item.nodeid}: serialized_rollback is not used in this suite")


@pytest.fixture(autouse=True)
def _fresh_table_cache():
    """Each test starts with no cached tables or pages: a rolled-back test database can repeat a data
    version."""
    from leaderboard.serving import page_cache
    from leaderboard.table import cache as table_cache

    table_cache.tables.clear()
    page_cache.store.clear()


@pytest.fixture
def browser():
    """Debian's Chromium (tests/browser/chromium.py)."""
    from tests.browser.chromium import launched_chromium

    with launched_chromium() as launched:
        yield launched


@pytest.fixture
def browser_page(browser):
    """A desktop-sized Chromium tab."""
    from tests.browser.chromium import new_page

    return new_page(browser, {"width": 1440, "height": 1000})
