"""The separate lane: verified scores over another suite than KernelBench, or timed on the CPU, never rank
among full-suite results by default; the lane filter shows them, alike in the HTML table, the JSON API and
the CSV export."""

import html
import importlib

import pytest
from django.apps import apps

from leaderboard.models import Lane, Score
from tests.leaderboard import factories
from tests.leaderboard.test_views_support import csv_rows, page_rows

pytestmark = pytest.mark.django_db

RESULTS = [(True, 2.0, 1.0), (True, 1.5, 0.8), (False, None, None)]


@pytest.fixture
def lanes():
    """Level-1 entries: reported, verified over KernelBench on a GPU, over the built-in suite on a GPU,
    and over KernelBench with CPU timing (the last two of the separate lane, with the best values)."""
    board = factories.Board()
    board.reported = factories.entry("Paper-Method", number=1, gpu="H100")
    factories.reported(board.reported, "fast_1", 30.0)
    board.ranked = factories.entry("GPU-KernelBench", number=1, gpu="H200")
    factories.verified_run(board.ranked, RESULTS, gpu="H200")
    board.builtin = factories.entry("GPU-Builtin", number=1, gpu="H200")
    factories.verified_run(board.builtin, RESULTS * 3, gpu="H200", n_tasks=9, suite="builtin")
    board.cpu = factories.entry("CPU-KernelBench", number=1, gpu="CPU")
    factories.verified_run(board.cpu, [(True, 9.0, 9.0)] * 3, gpu="CPU", device="cpu")
    return board


def shown(client, query: str = "") -> dict[str, list[int]]:
    """The entry ids of the level-1 table in each of its forms, in order."""
    page = client.get(f"/levels/1/?{query}").content.decode()
    data = client.get(f"/api/levels/1/leaderboard?{query}").json()
    records = csv_rows(client.get(f"/levels/1/export.csv?{query}").content.decode())
    return {
        "html": [row.entry_id for row in page_rows(page)],
        "json": [row["entry_id"] for row in data["rows"]],
        "csv": [int(record["entry_id"]) for record in records],
    }


def ids(*entries) -> list[int]:
    return [entry.pk for entry in entries]


def test_by_default_only_the_ranking_lane_shows(client, lanes):
    expected = ids(lanes.reported, lanes.ranked)  # Fast1 30 (reported), then 2 (2 of KernelBench's 100)
    found = shown(client)
    assert found == {"html": expected, "json": expected, "csv": expected}
    data = client.get("/api/levels/1/leaderboard").json()
    assert data["lanes"] == ["ranking"]
    assert data["filters"]["lane"] is None
    assert {row["lane"] for row in data["rows"]} == {"ranking"}
    assert "separate lane" not in client.get("/levels/1/").content.decode().split('id="leaderboard"')[1]


def test_the_lane_filter_shows_the_separate_lane_alone_or_both(client, lanes):
    separate = ids(lanes.builtin, lanes.cpu)  # Fast1 66.7 (6 of the built-in 9), then 3 (3 of 100, CPU)
    assert shown(client, "lane=separate") == {"html": separate, "json": separate, "csv": separate}
    both = ids(lanes.reported, lanes.builtin, lanes.ranked, lanes.cpu)
    assert sorted(shown(client, "lane=all")["html"]) == sorted(both)
    found = shown(client, "lane=all&sort=-fast_1")
    assert found["html"] == found["json"] == found["csv"]
    assert found["html"] == ids(
        lanes.builtin, lanes.reported, lanes.cpu, lanes.ranked
    )  # asked for: one ranking
    assert shown(client, "lane=ranking")["html"] == ids(lanes.reported, lanes.ranked)


def test_separate_rows_are_labelled_in_every_form(client, lanes):
    page = client.get("/levels/1/?lane=all").content.decode()
    assert "builtin suite · separate lane" in page
    assert "kernelbench suite · separate lane" in page
    assert "verified over the builtin suite, not the whole KernelBench level" in page
    assert "CPU timing, not a GPU verification; it never ranks among full-suite results" in page
    assert 'data-testid="lane-note"' in page
    rows = {row["entry_id"]: row for row in client.get("/api/levels/1/leaderboard?lane=all").json()["rows"]}
    assert (rows[lanes.builtin.pk]["lane"], rows[lanes.builtin.pk]["suite"]) == ("separate", "builtin")
    assert rows[lanes.builtin.pk]["n_tasks"] == 9
    assert rows[lanes.builtin.pk]["scores"]["fast_1"]["lane"] == "separate"
    assert (rows[lanes.ranked.pk]["lane"], rows[lanes.ranked.pk]["suite"]) == ("ranking", "kernelbench")
    assert (rows[lanes.reported.pk]["lane"], rows[lanes.reported.pk]["suite"]) == ("ranking", None)
    records = {
        int(r["entry_id"]): r for r in csv_rows(client.get("/levels/1/export.csv?lane=all").content.decode())
    }
    assert (records[lanes.cpu.pk]["lane"], records[lanes.cpu.pk]["suite"]) == ("separate", "kernelbench")
    assert (records[lanes.reported.pk]["lane"], records[lanes.reported.pk]["suite"]) == ("ranking", "")


def test_entry_and_method_pages_show_the_lane(client, lanes):
    entry = client.get(f"/entries/{lanes.builtin.pk}/").content.decode()
    assert "separate lane" in entry
    assert "builtin suite" in entry
    scores = client.get(f"/api/entries/{lanes.builtin.pk}").json()["scores"]
    assert {(s["lane"], s["suite"]) for s in scores} == {("separate", "builtin")}
    method = client.get(f"/methods/{lanes.builtin.method.slug}/").content.decode()
    assert "badge-lane" in method
    assert "66.67" in method  # the method page lists its entries in either lane, with their values


def test_a_bad_lane_is_a_clear_400_everywhere(client, lanes):
    for url in ("/levels/1/", "/api/levels/1/leaderboard", "/levels/1/export.csv"):
        response = client.get(f"{url}?lane=fast")
        assert response.status_code == 400, url
        assert "lane='fast' is not one of: ranking, separate, all." in html.unescape(
            response.content.decode()
        )


def test_the_migration_puts_existing_verified_scores_in_their_lane(lanes):
    Score.objects.filter(provenance="verified").update(suite="", lane=Lane.RANKING)  # as before the migration
    migration = importlib.import_module("leaderboard.migrations.0009_score_lane_and_suite")
    migration.record_lanes(apps, None)
    lanes_of = {
        entry.pk: set(Score.objects.filter(entry=entry).values_list("suite", "lane"))
        for entry in (lanes.reported, lanes.ranked, lanes.builtin, lanes.cpu)
    }
    assert lanes_of == {
        lanes.reported.pk: {("", "ranking")},
        lanes.ranked.pk: {("kernelbench", "ranking")},
        lanes.builtin.pk: {("builtin", "separate")},
        lanes.cpu.pk: {("kernelbench", "separate")},
    }
