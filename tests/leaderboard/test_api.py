"""The JSON API and CSV export equal the table on screen; entry and method endpoints carry provenance;
the issue's checks on the seed data."""

import math

import pytest

from tests.leaderboard import factories
from tests.leaderboard.test_views_support import csv_rows, page_headers, page_rows

QUERIES = [
    "",
    "sort=fast_2",
    "sort=-name",
    "view=fastp&p=1.35",
    "view=fastp&p=2&provenance=reported",
    "view=geomean&hardware=H100",
    "view=geomean&sort=-speedup_mean&baseline=compile",
    "kind=trained&from=2026-01&to=2026-12",
    "per_page=3&page=2",
]


@pytest.fixture
def board(db):
    return factories.make_board()


def as_float(text: str) -> float | None:
    return float(text) if text else None


def same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-12)


def screen(client, query: str):
    html = client.get(f"/levels/2/?{query}").content.decode()
    return page_headers(html), page_rows(html)


def api_rows(client, query: str) -> dict:
    response = client.get(f"/api/levels/2/leaderboard?{query}")
    assert response.status_code == 200
    return response.json()


@pytest.mark.parametrize("query", QUERIES)
def test_json_rows_equal_the_table_on_screen(client, board, query):
    headers, rows = screen(client, query)
    data = api_rows(client, query)
    assert [row["entry_id"] for row in data["rows"]] == [row.entry_id for row in rows]
    assert [column["key"] for column in data["columns"]] == headers
    for shown, sent in zip(rows, data["rows"], strict=True):
        assert str(sent["rank"] or "—") == shown.rank
        for key, cell in shown.cells.items():
            value = sent["fast_p"]["value"] if key == "fast_p" else (sent["scores"][key] or {}).get("value")
            assert same(as_float(cell.value), value), (sent["name"], key)


@pytest.mark.parametrize("query", QUERIES)
def test_csv_equals_the_table_on_screen(client, board, query):
    headers, rows = screen(client, query.replace("per_page=3&page=2", "per_page=1000"))
    response = client.get(f"/levels/2/export.csv?{query}")
    assert response["Content-Type"].startswith("text/csv")
    records = csv_rows(response.content.decode())
    assert [int(record["entry_id"]) for record in records] == [row.entry_id for row in rows]
    metric_headers = [key for key in headers if key in rows[0].cells] if rows else []
    for shown, record in zip(rows, records, strict=True):
        assert (record["rank"] or "—") == shown.rank
        for key in metric_headers:
            assert same(as_float(record[key]), as_float(shown.cells[key].value)), (record["entry"], key)
            if shown.cells[key].value:
                expected = "verified" if "is-verified" in shown.cells[key].classes else "reported"
                assert record[f"{key}_provenance"] == expected


def test_json_scores_carry_provenance(client, board):
    data = api_rows(client, "")
    by_name = {row["name"]: row for row in data["rows"]}
    reported = by_name["Alpha-14B"]["scores"]["fast_1"]
    assert reported["provenance"] == "reported"
    assert reported["reported"]["source"] == {
        "title": "Dr. Kernel paper",
        "kind": "paper",
        "arxiv_id": "2602.05885",
        "url": "https://arxiv.org/abs/2602.05885",
    }
    assert reported["reported"]["source_table"] == "Table 1"
    assert reported["threshold_op"] == ">="
    verified = by_name["Verified-Method"]["scores"]["fast_1"]
    assert verified["provenance"] == "verified"
    assert verified["verified"]["run"]["id"] == board.run.pk
    assert verified["verified"]["run"]["hardware"] == "H100"
    assert verified["difference"] == pytest.approx(-20.0)
    assert by_name["Hacked-Method"]["scores"]["fast_1"]["hacked"] is True
    assert by_name["Alpha-14B"]["scores"]["correct_rate"] is None
    assert data["filters"]["hardware"] is None
    assert data["count"] == 8


def test_api_errors_are_json(client, board):
    response = client.get("/api/levels/2/leaderboard?view=cards")
    assert response.status_code == 400
    assert "view='cards'" in response.json()["error"]
    assert client.get("/api/levels/7/leaderboard").status_code == 404
    assert client.get("/api/entries/999999").status_code == 404
    assert client.get("/api/methods/nobody").status_code == 404
    assert client.post("/api/levels/2/leaderboard").status_code == 405
    assert client.get("/levels/2/export.csv?p=x").status_code == 400


def test_entry_endpoint_lists_every_visible_score_with_provenance(client, board):
    data = client.get(f"/api/entries/{board.verified.pk}").json()
    assert data["name"] == "Verified-Method"
    kinds = {(score["metric"], score["provenance"], score["baseline"]) for score in data["scores"]}
    assert ("fast_1", "reported", "eager") in kinds
    assert ("fast_1", "verified", "eager") in kinds
    assert ("fast_1", "verified", "compile") in kinds
    verified = next(
        s for s in data["scores"] if s["metric"] == "speedup_geomean" and s["baseline"] == "eager"
    )
    assert verified["run"]["id"] == board.run.pk
    assert verified["ci"] is not None
    assert data["runs"][0]["id"] == board.run.pk
    hidden = client.get(f"/api/entries/{board.hidden.pk}").json()
    assert hidden["scores"] == []


def test_method_endpoint_lists_entries_with_scores(client, board):
    data = client.get(f"/api/methods/{board.alpha.method.slug}").json()
    assert data["kind"] == "trained"
    assert data["entries"][0]["scores"]["fast_1"]["value"] == 70.6
    assert client.get("/api/levels").json()["levels"][1]["leaderboard"] == "/api/levels/2/leaderboard"


# --- the checks on the shipped seed data -----------------------------------------------------------


def seed_names(client, query: str, level: int = 2) -> list[tuple[str, float | None]]:
    data = client.get(f"/api/levels/{level}/leaderboard?{query}&per_page=100").json()
    key = data["sort"].removeprefix("-")
    return [(row["name"], (row["scores"].get(key) or {}).get("value")) for row in data["rows"]]


def test_seed_l2_fast1_puts_davinci_14b_first(client, seeded):
    rows = seed_names(client, "")
    assert rows[0] == ("daVinci-kernel-14B", 70.6)
    html = client.get("/levels/2/").content.decode()
    assert page_rows(html)[0].cells["fast_1"].value == "70.6"


def test_seed_l2_fast2_sort_puts_davinci_8b_first(client, seeded):
    assert seed_names(client, "sort=-fast_2")[0] == ("daVinci-kernel-8B", 7.9)


def test_seed_geomean_view_orders_the_statistics_rows_by_geomean(client, seeded):
    rows = [(name, value) for name, value in seed_names(client, "view=geomean") if value is not None]
    values = [value for _, value in rows]
    assert values == sorted(values, reverse=True)
    assert values == [2.592, 2.214, 1.695, 1.214, 0.279]
    assert {name.lower().split()[0] for name, _ in rows} == {"kernelblaster", "ai", "iree"}


def test_seed_l3_shows_launch_post_scores_with_their_baselines(client, seeded):
    data = client.get("/api/levels/3/leaderboard?view=geomean").json()
    by_name = {row["name"]: row["scores"] for row in data["rows"]}
    assert by_name["GLM-5.1"]["speedup_geomean"]["value"] == 3.6
    assert by_name["GLM-5.1"]["speedup_geomean"]["baseline"] == "eager"
    assert by_name["Qwen3.7-Plus"]["speedup_median"]["value"] == 2.06
    assert by_name["Qwen3.7-Plus"]["speedup_median"]["baseline"] == "compile"
    html = client.get("/levels/3/?view=geomean").content.decode()
    assert 'title="Speedup against torch.compile, not PyTorch eager">compile</span>' in html


def test_seed_json_and_csv_match_the_screen(client, seeded):
    for level in (2, 3):
        html = client.get(f"/levels/{level}/?per_page=100").content.decode()
        shown = [row.entry_id for row in page_rows(html)]
        data = client.get(f"/api/levels/{level}/leaderboard?per_page=100").json()
        records = csv_rows(client.get(f"/levels/{level}/export.csv").content.decode())
        assert [row["entry_id"] for row in data["rows"]] == shown
        assert [int(record["entry_id"]) for record in records] == shown
