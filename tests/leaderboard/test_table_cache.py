"""Cached tables: served while the data is unchanged, rebuilt as soon as a change to shown data commits."""

import gc
import threading

import pytest
from django.db import transaction

from leaderboard.models import DataVersion, Score
from leaderboard.table.cache import CollectorPause, LruCache
from tests.leaderboard import factories

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _tables_not_pages(settings):
    """These tests are about the table cache: whole answers are not kept (serving/page_cache.py)."""
    settings.PAGE_CACHE_ENABLED = False


@pytest.fixture
def board():
    return factories.make_board()


def version() -> int | None:
    return DataVersion.objects.values_list("value", flat=True).first()


def test_unchanged_data_is_served_from_the_cache_in_one_query(client, board, django_assert_num_queries):
    first = client.get("/levels/2/").content
    with django_assert_num_queries(1):  # the level with the data version
        assert client.get("/levels/2/").content == first
    with django_assert_num_queries(1):
        client.get("/api/levels/2/leaderboard")
    with django_assert_num_queries(1):
        assert client.get("/api/levels/2/leaderboard").status_code == 200


def test_a_saved_score_shows_at_once(client, board):
    score = Score.objects.filter(metric_id="fast_1", provenance="reported").first()
    client.get("/levels/2/")
    score.value = 99.25
    score.save()
    assert "99.25" in client.get("/levels/2/").content.decode()


def save_then_fail(score: Score) -> None:
    with transaction.atomic():
        score.value = 11.0
        score.save()
        raise RuntimeError("rolled back")


def test_saves_and_deletes_bump_the_version_and_a_rollback_does_not(board):
    score = factories.reported(factories.entry("Bumps"), "fast_1", 10.0)
    before_save = version()
    score.save()
    assert version() == before_save + 1
    with pytest.raises(RuntimeError, match="rolled back"):
        save_then_fail(score)
    assert version() == before_save + 1
    score.delete()
    assert version() == before_save + 2


def test_the_cache_drops_the_least_recently_used():
    cache, built = LruCache(2), []

    def build(name):
        built.append(name)
        return name

    for key in ("a", "b", "a", "c", "a", "b"):
        cache.get_or_build(key, lambda key=key: build(key))
    assert built == ["a", "b", "c", "b"]


def test_the_collector_is_paused_while_any_build_runs_and_restored_after_the_last():
    pause = CollectorPause()
    assert gc.isenabled()
    first_inside, second_inside, first_may_leave = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with pause():
            first_inside.set()
            first_may_leave.wait(10)
        seen["after first"] = gc.isenabled()  # the second is still inside

    def second():
        first_inside.wait(10)
        with pause():
            second_inside.set()
            seen["second inside"] = gc.isenabled()
            first_may_leave.set()
            worker.join(10)

    worker = threading.Thread(target=first)
    worker.start()
    second()
    assert seen == {"second inside": False, "after first": False}
    assert gc.isenabled()


def test_a_failed_build_restores_the_collector_and_a_disabled_one_stays_disabled():
    pause = CollectorPause()
    with pytest.raises(RuntimeError), pause():
        raise RuntimeError("the build failed")
    assert gc.isenabled()
    gc.disable()
    try:
        with pause():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
