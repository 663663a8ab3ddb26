"""Whole answers of the public read pages: replayed to anonymous visitors while the data is unchanged, never
to anyone with a session or a token, and gone the moment shown data changes."""

import gzip
import time

import pytest
from django.contrib.auth.models import User

from leaderboard.models import Score
from leaderboard.serving.page_cache import AnswerStore, StoredAnswer
from tests.leaderboard import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def board():
    return factories.make_board()


def test_an_anonymous_repeat_is_replayed_with_its_headers(client, board):
    first = client.get("/levels/2/")
    assert "X-Page-Cache" not in first
    second = client.get("/levels/2/")
    assert second["X-Page-Cache"] == "hit"
    assert second.content == first.content
    for header in ("Content-Type", "Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options"):
        assert second[header] == first[header]
    assert int(second["Content-Length"]) == len(first.content)


@pytest.mark.parametrize("path", ["/levels/2/", "/api/levels/2/leaderboard", "/levels/2/export.csv"])
def test_a_client_accepting_gzip_gets_the_same_answer_compressed(client, board, path):
    first = client.get(path)
    assert "Accept-Encoding" in first["Vary"]
    packed = client.get(path, HTTP_ACCEPT_ENCODING="br, gzip;q=0.8")
    assert packed["X-Page-Cache"] == "hit"
    assert packed["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in packed["Vary"]
    assert int(packed["Content-Length"]) == len(packed.content) < len(first.content) / 3
    assert gzip.decompress(packed.content) == first.content


@pytest.mark.parametrize("accepted", ["", "identity", "br", "gzip;q=0", "deflate, gzip; q=0.0", "*;q=0"])
def test_a_client_not_accepting_gzip_gets_it_plain(client, board, accepted):
    first = client.get("/levels/2/")
    plain = client.get("/levels/2/", HTTP_ACCEPT_ENCODING=accepted)
    assert plain["X-Page-Cache"] == "hit"
    assert "Content-Encoding" not in plain
    assert plain.content == first.content


def test_the_csv_keeps_its_attachment_name_and_queries_their_own_answers(client, board):
    first = client.get("/levels/2/export.csv")
    again = client.get("/levels/2/export.csv")
    assert again["X-Page-Cache"] == "hit"
    assert again["Content-Disposition"] == first["Content-Disposition"]
    other = client.get("/levels/2/?sort=date")
    assert "X-Page-Cache" not in other


def test_a_change_to_shown_data_is_seen_at_once(client, board):
    client.get("/levels/2/")
    assert client.get("/levels/2/")["X-Page-Cache"] == "hit"
    score = Score.objects.filter(metric_id="fast_1", provenance="reported").first()
    score.value = 99.25
    score.save()
    fresh = client.get("/levels/2/")
    assert "X-Page-Cache" not in fresh
    assert "99.25" in fresh.content.decode()


def test_a_signed_in_visitor_is_never_served_nor_stored(client, board):
    user = User.objects.create_user("reader", password="pw-for-tests-only")
    client.force_login(user)
    client.get("/levels/2/")
    assert "X-Page-Cache" not in client.get("/levels/2/")
    client.logout()
    client.cookies.clear()
    assert "X-Page-Cache" not in client.get("/levels/2/")  # the signed-in answers were not kept


def test_a_token_bearer_is_not_served_from_the_store(client, board):
    client.get("/api/levels/2/leaderboard")
    assert client.get("/api/levels/2/leaderboard")["X-Page-Cache"] == "hit"
    with_token = client.get("/api/levels/2/leaderboard", HTTP_AUTHORIZATION="Token abc")
    assert "X-Page-Cache" not in with_token


def test_pages_outside_the_list_and_errors_are_not_kept(client, board):
    client.get("/submit/")
    assert "X-Page-Cache" not in client.get("/submit/")
    client.get("/levels/9/")
    missing = client.get("/levels/9/")
    assert missing.status_code == 404
    assert "X-Page-Cache" not in missing


def test_head_replays_the_headers_without_the_body(client, board):
    body = client.get("/levels/2/").content
    head = client.head("/levels/2/")
    assert head["X-Page-Cache"] == "hit"
    assert head.content == b""
    assert int(head["Content-Length"]) == len(body)


def test_switched_off_nothing_is_replayed(client, board, settings):
    settings.PAGE_CACHE_ENABLED = False
    client.get("/levels/2/")
    assert "X-Page-Cache" not in client.get("/levels/2/")


def answer(size: int, at: float | None = None) -> StoredAnswer:
    return StoredAnswer(b"x" * size, (), time.monotonic() if at is None else at)


def test_the_store_drops_the_least_recently_used_past_its_bytes():
    store = AnswerStore(max_bytes=1000, max_age=60)
    store.put("a", answer(200))
    store.put("b", answer(200))
    store.put("c", answer(200))
    store.get("a")
    store.put("d", answer(200))
    store.put("e", answer(200))  # 1000 bytes: all fit
    store.put("f", answer(200))  # over: the least recently used ("b") goes
    assert store.get("b") is None
    assert all(store.get(key) for key in "acdef")
    assert store.size == 1000


def test_the_store_refuses_an_answer_over_a_quarter_of_it():
    store = AnswerStore(max_bytes=1000, max_age=60)
    store.put("big", answer(251))
    assert store.get("big") is None
    assert store.size == 0


def test_an_old_answer_is_rebuilt_by_one_caller_while_the_others_replay_it():
    store = AnswerStore(max_bytes=1000, max_age=60)
    old = answer(10, at=time.monotonic() - 61)
    store.put("page", old)
    assert store.get("page") is None  # the first caller builds it
    assert store.get("page") is old  # meanwhile the others replay the old one
    store.put("page", answer(20))
    store.release("page")
    assert len(store.get("page").content) == 20
    assert store.size == 20


def test_a_rebuild_that_stored_nothing_lets_the_next_caller_try_and_too_old_is_never_replayed():
    store = AnswerStore(max_bytes=1000, max_age=60)
    store.put("page", answer(10, at=time.monotonic() - 61))
    assert store.get("page") is None
    store.release("page")  # the build failed or was not storable
    assert store.get("page") is None  # the next caller builds
    store.put("ancient", answer(10, at=time.monotonic() - 121))
    assert store.get("ancient") is None
    assert store.get("ancient") is None  # past twice the age, even while another caller builds it
