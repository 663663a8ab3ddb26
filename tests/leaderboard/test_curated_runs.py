"""Curation of a verified run reaches what is computed from its per-task results (fast_p at any p, the
curve), a computed value carries its run's state and conventions, and the entry page compares against
the same run as the table."""

import pytest

from leaderboard.models import CurationState, Score
from leaderboard.table import cache as table_cache
from tests.leaderboard import factories

pytestmark = pytest.mark.django_db

HALF_FAST = [(True, 2.0, 1.0)] * 5 + [(False, None, None)] * 5


def fast_p_cell(client, p: str, name: str) -> dict:
    rows = client.get(f"/api/levels/2/leaderboard?view=fastp&p={p}").json()["rows"]
    return next(row for row in rows if row["name"] == name)


def page_html(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def run_and_rival():
    rival = factories.entry("Rival", gpu="H100")
    factories.reported(rival, "fast_1", 10.0, factories.source())
    verified = factories.entry("Verified", gpu="H100")
    run = factories.verified_run(verified, HALF_FAST, n_tasks=10)
    return verified, run


@pytest.mark.parametrize("p", ["0", "1", "1.35"])
def test_a_run_with_a_hacked_fast_p_score_gets_no_computed_value_at_any_p(client, run_and_rival, p):
    _, run = run_and_rival
    assert fast_p_cell(client, p, "Verified")["rank"] == 1  # 50 % before curation
    Score.objects.filter(run=run, metric_id="fast_1").update(state=CurationState.HACKED)
    table_cache.bump()  # a bulk update() sends no signals
    row = fast_p_cell(client, p, "Verified")
    assert row["rank"] is None
    assert row["fast_p"]["value"] is None
    assert row["fast_p"]["hacked"]
    if p == "1":
        assert fast_p_cell(client, p, "Rival")["rank"] == 1  # its reported Fast1 now leads


def test_a_hidden_fast_p_score_withholds_the_computed_values_and_the_curve(client, run_and_rival):
    verified, run = run_and_rival
    Score.objects.filter(run=run, metric_id="fast_2").update(state=CurationState.HIDDEN)
    table_cache.bump()  # a bulk update() sends no signals
    row = fast_p_cell(client, "1.35", "Verified")
    assert row["fast_p"] is None or row["fast_p"]["value"] is None
    assert f'"id": {verified.pk}, "label": "Verified", "verified": true' not in page_html(
        client, "/levels/2/?view=fastp&p=1.35"
    )


def test_a_computed_value_carries_its_runs_state_and_conventions(client, run_and_rival):
    _, run = run_and_rival
    Score.objects.filter(run=run).update(state=CurationState.FLAGGED, state_reason="odd timings")
    table_cache.bump()  # a bulk update() sends no signals
    for p in ("1.2", "1.35"):
        cell = fast_p_cell(client, p, "Verified")["fast_p"]
        assert cell["value"] == 50.0
        assert cell["flagged"], p
        assert cell["verified"]["state"] == CurationState.FLAGGED, p
        assert (cell["baseline"], cell["n_tasks"], cell["denominator"]) == ("eager", 10, "all_tasks"), p
        assert cell["threshold_op"] == ">", p


def test_the_entry_page_compares_against_the_run_the_table_shows(client):
    entry = factories.entry("Reverified", gpu="H100")
    factories.reported(entry, "speedup_geomean", 2.5, factories.source())
    factories.verified_run(entry, [(True, 3.0, 3.0)] * 2, n_tasks=2)  # older: geomean 3.0
    factories.verified_run(entry, [(False, None, None)] * 2, n_tasks=2)  # newer: nothing correct
    row = next(r for r in client.get("/api/levels/2/leaderboard").json()["rows"] if r["name"] == "Reverified")
    assert row["scores"]["speedup_geomean"]["difference"] is None
    assert "verified − reported" not in page_html(client, f"/entries/{entry.pk}/")  # not +0.5 vs the old run
