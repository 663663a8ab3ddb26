"""Head to head: /compare/?entries=… — metrics side by side, the per-task table with its winners, the
scatter's data, and clear 400s for bad ids."""

import json
import re

import pytest

from leaderboard.views.compare import BadComparison, parse_ids
from tests.leaderboard import factories

FIRST = [(True, 1.5, 0.9), (True, 2.5, 1.2), (False, None, None), (True, 1.1, 1.0)]
SECOND = [(True, 2.0, 1.1), (True, 2.5, 1.3), (True, 0.5, 0.4), (False, None, None)]


@pytest.fixture
def entries(db):
    first = factories.entry("First", gpu="H100")
    factories.verified_run(first, FIRST, n_tasks=4)
    second = factories.entry("Second", gpu="H100")
    factories.verified_run(second, SECOND, n_tasks=4)
    reported = factories.entry("Paper-Only", gpu="H100")
    factories.reported(reported, "fast_1", 42.0)
    return first, second, reported


def test_parse_ids_keeps_order_and_drops_repeats():
    assert parse_ids(" 7, 3,7 ,") == [7, 3]
    for bad, message in [
        ("", "Give the entries"),
        ("3", "at least two"),
        ("3,x", "'x' is not an entry id"),
        ("3,-4", "'-4' is not an entry id"),
        ("1,2,3,4,5,6,7", "At most 6"),
    ]:
        with pytest.raises(BadComparison, match=message):
            parse_ids(bad)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "Give the entries"),
        ("entries=1,abc", "is not an entry id"),
        ("entries=999998,999999", "no entry"),
    ],
)
def test_bad_ids_answer_400_with_the_reason(client, db, query, message):
    response = client.get(f"/compare/?{query}")
    assert response.status_code == 400
    assert message in response.content.decode()


def test_metrics_side_by_side_with_conventions_and_intervals(client, entries):
    first, second, reported = entries
    html = client.get(f"/compare/?entries={first.pk},{second.pk},{reported.pk}").content.decode()
    row = re.search(r'<tr data-metric="fast_1">.*?</tr>', html, re.S).group(0)
    # Fast1: first 3/4 = 75 %, second 2/4 = 50 %, reported 42 % without an interval.
    values = re.findall(r'<span class="v">([^<]+)</span>', row)
    assert values == ["75", "50", "42"]
    assert "[30.06–95.44] wilson" in row  # Wilson 3/4 at 95 %
    assert "n/a" in row
    assert "counts speedup &gt; p" in row


def test_per_task_table_names_the_winner_and_the_scatter_has_both_solved_tasks(client, entries):
    first, second, _ = entries
    html = client.get(f"/compare/?entries={first.pk},{second.pk}").content.decode()
    rows = re.findall(r'<tr data-task="([^"]+)">(.*?)</tr>', html, re.S)
    assert [task for task, _ in rows] == [f"level_2_problem_{n}" for n in (1, 2, 3, 4)]
    winners = [re.findall(r'<td class="text">([^<]*)</td>', body)[-1] for _, body in rows]
    assert winners == ["Second", "tie", "Second", "First"]  # 2.0 > 1.5; 2.5 = 2.5; one correct, one correct
    assert "incorrect" in rows[2][1]
    assert "2.500" in rows[1][1]
    data = json.loads(
        re.search(r'<script id="compare-data" type="application/json">(.*?)</script>', html).group(1)
    )
    assert [(p["x"], p["y"]) for p in data["points"]] == [(1.5, 2.0), (2.5, 2.5)]
    assert (data["x_label"], data["y_label"]) == ("First", "Second")
    assert "js/compare.js" in html


def test_reported_entries_compare_without_a_task_table(client, entries):
    _, _, reported = entries
    other = factories.entry("Another paper", gpu="H100")
    factories.reported(other, "fast_1", 30.0)
    html = client.get(f"/compare/?entries={reported.pk},{other.pk}").content.decode()
    assert "None of these entries has a verified run" in html
    assert "compare.js" not in html


def test_rows_ticked_on_the_level_table_are_compared(client, entries):
    first, second, _ = entries
    html = client.get("/levels/2/").content.decode()
    assert '<form id="compare-entries"' in html
    assert f'value="{first.pk}" form="compare-entries"' in html
    response = client.get(f"/compare/?compare={first.pk}&compare={second.pk}")
    assert response.status_code == 200
    assert "Head to head" in response.content.decode()
