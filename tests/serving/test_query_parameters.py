"""Junk in any query parameter of any public URL gets a 400 with a sentence or a normal answer, never a 500.

The URLs are read from the URLconf, so a new one is covered (or must be named as not public); their path
parameters are filled with real objects of a small board, and hypothesis sends junk to every parameter
the table views read plus a few names no view reads.
"""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderboard.models import EvaluationRun, TaskResult
from leaderboard.views.params import TABLE_PARAMETERS
from tests.leaderboard.factories import make_board

NOT_PUBLIC = ("admin/",)
"""Route prefixes for staff only (the admin and the RQ dashboard behind it)."""

JUNK = [
    "", " ", "\x00", "a\x00b", "%00", "NaN", "nan", "inf", "-inf", "1e309", "-1", "0", "00", "1.5", "1_0",
    "²", "٣", "١٢", "9" * 5000, "-" * 300, "2026-13", "0000-01", "9999-12", "10000-01", "2026-00", "=1+2",
    "<script>", "' OR 1=1 --", "\ud7ff", "\uffff", "🦀", "\t", "\r\n", ",", ",,,", "1," * 80,
    "99999999999999999999999", "-0", "+1", "0x10", "1e3",
]  # fmt: skip
NAMES = [*TABLE_PARAMETERS, "raw", "next", "format", "x"]
junk_values = st.one_of(
    st.sampled_from(JUNK),
    st.sampled_from(JUNK),  # twice: the known troublemakers are drawn half the time
    st.text(max_size=40),
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
)
query_strategy = st.dictionaries(st.sampled_from(NAMES), st.lists(junk_values, min_size=1, max_size=3))


def public_routes(resolver=None, prefix="") -> list[tuple[str, URLPattern]]:
    """(route, pattern) for every URL pattern of the URLconf outside NOT_PUBLIC."""
    found = []
    for entry in (resolver or get_resolver()).url_patterns:
        route = prefix + str(entry.pattern)
        if route.startswith(NOT_PUBLIC):
            continue
        if isinstance(entry, URLResolver):
            found += public_routes(entry, route)
        else:
            found.append((route, entry))
    return found


ROUTES = public_routes()


@pytest.fixture
def board(db):
    board = make_board()
    result = TaskResult.objects.filter(run=board.run).select_related("kernel", "task__level").first()
    board.values = {
        "number": 2,
        "slug": board.alpha.method.slug,
        "suite": result.task.suite,
        "level": result.task.level.number,
        "problem_id": result.task.problem_id,
        "uidb64": "MQ",  # the password reset link's user id (1) and a token that is not valid
        "token": "abc-def",
    }
    board.pks = {
        "entry": board.alpha.pk, "api-entry": board.alpha.pk, "run": board.run.pk, "kernel": result.kernel_id,
        "log": result.pk, "detail": board.run.submission_id, "task_table": board.run.submission_id,
        "api_submission": board.run.submission_id, "cancel": board.run.submission_id,
        "api_cancel": board.run.submission_id, "revoke_token": 1, "api-eval-results": board.alpha.pk,
        "public_run_kernels": board.run.pk, "public_kernel": result.kernel_id,
    }  # fmt: skip
    return board


def fill(route: str, pattern: URLPattern, board) -> str:
    """The route with its <converter:name> parts replaced by real values of the board."""
    path = route
    for name in pattern.pattern.converters:
        value = board.pks[pattern.name] if name == "pk" else board.values[name]
        start = path.index("<")
        path = path[:start] + str(value) + path[path.index(">", start) + 1 :]
    return "/" + path


def test_every_public_route_can_be_filled(board):
    """Each route's path parameters are known to the test: a new URL gets them, or the test fails here."""
    assert len(ROUTES) >= 20
    for route, pattern in ROUTES:
        assert "<" not in fill(route, pattern, board), route


@pytest.mark.parametrize(("route", "pattern"), ROUTES, ids=[route or "/" for route, _ in ROUTES])
def test_junk_query_parameters_never_give_a_server_error(route, pattern, board, client):
    path = fill(route, pattern, board)

    @settings(
        max_examples=25,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(query=query_strategy)
    def check(query):
        response = client.get(path, query)
        assert response.status_code < 500, (path, query, response.status_code)
        if response.status_code == 400:
            assert sentence_of(response), (path, query)

    check()


def sentence_of(response) -> str:
    """The error's words, from a JSON body or the text of an HTML or plain-text one."""
    if response["Content-Type"].startswith("application/json"):
        return response.json().get("error", "")
    return response.content.decode(errors="replace").strip()


TABLE_URLS = ["/levels/2/", "/api/levels/2/leaderboard", "/levels/2/export.csv"]


@pytest.mark.parametrize("url", TABLE_URLS)
@pytest.mark.parametrize("name", TABLE_PARAMETERS)
def test_every_junk_value_in_every_table_parameter(url, name, client, board):
    """The exhaustive sweep behind the property test: each known troublemaker in each table parameter."""
    for value in JUNK:
        response = client.get(url, {name: value})
        assert response.status_code in (200, 400), (name, value, response.status_code)
        if response.status_code == 400:
            assert sentence_of(response), (name, value)


REFUSED = [
    ("hardware", "\x00"), ("q", "a\x00"), ("p", "NaN"), ("p", "inf"), ("p", "1e309"), ("p", "9" * 5000),
    ("page", "9" * 5000), ("page", "²"), ("per_page", "0"), ("per_page", "-1"), ("compare", "٣"),
    ("compare", "9" * 40), ("compare", ",".join(map(str, range(1, 60)))), ("from", "0000-01"),
    ("to", "9999-12"), ("from", "2026-13"), ("hardware", "H" * 201), ("view", "nope"), ("sort", "-nope"),
    ("kind", "x" * 5000),
]  # fmt: skip


@pytest.mark.parametrize("url", TABLE_URLS)
@pytest.mark.parametrize(("name", "value"), REFUSED, ids=[f"{n}={v[:12]!r}" for n, v in REFUSED])
def test_bad_table_parameters_get_a_400_naming_the_parameter(url, name, value, client, board):
    response = client.get(url, {name: value})
    assert response.status_code == 400, response.content[:300]
    words = sentence_of(response)
    assert "control characters" in words or name in words, words
    assert len(words) < 2000  # a huge value is not echoed whole


def test_the_board_has_a_verified_run(board):
    """The filled URLs point at real objects (a run with results), so the views do their full work."""
    assert EvaluationRun.objects.filter(pk=board.run.pk, status="completed").exists()


HUGE = "9" * 20


@pytest.mark.parametrize("route", [r for r, p in ROUTES if "<int:" in r], ids=lambda r: r)
def test_ids_too_large_for_the_database_are_not_found(route, client, db):
    path = "/" + route
    while "<int:" in path:
        start = path.index("<int:")
        path = path[:start] + HUGE + path[path.index(">", start) + 1 :]
    path = path.replace("<slug:suite>", "builtin").replace("<uidb64>", "MQ").replace("<token>", "x")
    response = client.get(path)
    assert response.status_code in (404, 405, 302), (path, response.status_code)
