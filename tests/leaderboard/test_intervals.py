"""Uncertainty: Wilson intervals for fast_p (any p) and the correct rate, the bootstrap over tasks for
geomean and mean speedups, their display (HTML, JSON, CSV), 'n/a' for reported numbers, and ties at 95 %."""

import pytest

from leaderboard import intervals, scoring
from leaderboard.intervals import Interval
from tests.leaderboard import factories
from tests.leaderboard.test_views_support import csv_rows

FIVE_FAST = factories.FIVE_FAST  # over 10 tasks: Fast1 3/10, correct 4/10, fast_1.3 2/10


def test_wilson_interval_matches_the_hand_computation():
    assert intervals.wilson(7, 10) == pytest.approx((0.3968, 0.8922), abs=5e-5)
    assert intervals.wilson(3, 10) == pytest.approx((0.1078, 0.6032), abs=5e-5)
    low, high = intervals.wilson(0, 10)  # z² / (n + z²) = 3.8415 / 13.8415
    assert low == 0.0
    assert high == pytest.approx(0.2775, abs=5e-5)
    with pytest.raises(ValueError, match="not a proportion"):
        intervals.wilson(11, 10)


def test_percent_interval_reads_hits_from_the_percent_of_n():
    found = intervals.percent_interval(70.0, 10)
    assert (found.low, found.high, found.method) == pytest.approx((39.68, 89.22, "wilson"), abs=5e-3)


def test_bootstrap_is_reproducible_and_exact_for_constant_values():
    values = [0.8, 1.1, 1.5, 2.5, 1.0, 1.0]
    first = intervals.bootstrap(values, scoring.geomean)
    assert first == intervals.bootstrap(values, scoring.geomean)  # fixed seed
    assert first[0] < scoring.geomean(values) < first[1]
    assert intervals.bootstrap([2.0, 2.0, 2.0], scoring.arithmetic_mean) == (2.0, 2.0)
    assert intervals.bootstrap([2.0], scoring.geomean) == (None, None)


def test_aggregate_stores_wilson_for_rates_and_bootstrap_for_mean_and_geomean():
    outcomes = [scoring.TaskOutcome(c, s) for c, s, _ in FIVE_FAST]
    result = scoring.aggregate(outcomes, 10)
    assert (result["fast_1"].ci_low, result["fast_1"].ci_high) == pytest.approx((10.78, 60.32), abs=5e-3)
    assert (result["correct_rate"].ci_low, result["correct_rate"].ci_high) == pytest.approx(
        (16.82, 68.73), abs=5e-3
    )
    speedups = [1.5, 2.5, 0.8, 1.1]
    mean = result["speedup_mean"]
    assert (mean.ci_low, mean.ci_high) == scoring.bootstrap_ci(speedups, scoring.arithmetic_mean)
    assert mean.ci_low < mean.value < mean.ci_high


def test_reported_numbers_have_no_interval_and_verified_ones_do():
    assert scoring.value_interval("fast_1", 70.0, 10, (None, None), per_task=False) is None
    verified = scoring.value_interval("fast_1", 70.0, 10, (None, None), per_task=True)
    assert (verified.low, verified.high) == pytest.approx((39.68, 89.22), abs=5e-3)
    geomean = scoring.value_interval("speedup_geomean", 1.4, 10, (1.1, 1.9), per_task=True)
    assert geomean == Interval(1.1, 1.9, "bootstrap")
    assert scoring.value_interval("speedup_geomean", 1.4, 10, (None, None), per_task=True) is None


def test_ties_are_rows_whose_interval_overlaps_the_row_above():
    ordered = [Interval(50, 80, "wilson"), Interval(40, 60, "wilson"), Interval(10, 30, "wilson"), None]
    assert scoring.inseparable_from_previous(ordered) == [False, True, False, False]
    assert scoring.inseparable_from_previous([None, Interval(1, 2, "wilson")]) == [False, False]


@pytest.fixture
def two_verified(db):
    """A reported row (Fast1 70 %) and two verified rows over 10 tasks: Fast1 30 % and 20 %."""
    reported = factories.entry("Reported-Only", gpu="H100")
    factories.reported(reported, "fast_1", 70.0)
    first = factories.entry("First-Verified", gpu="H100")
    factories.verified_run(first, FIVE_FAST, n_tasks=10)
    second = factories.entry("Second-Verified", gpu="H100")
    factories.verified_run(second, [(True, 1.5, 1.0), (True, 2.5, 1.0), (False, None, None)], n_tasks=10)
    return reported, first, second


def test_json_cells_carry_ci_low_ci_high_and_ci_method(client, two_verified):
    reported, first, second = two_verified
    rows = {row["entry_id"]: row for row in client.get("/api/levels/2/leaderboard").json()["rows"]}
    fast_1 = rows[first.pk]["scores"]["fast_1"]
    assert (fast_1["ci_low"], fast_1["ci_high"]) == pytest.approx((10.78, 60.32), abs=5e-3)
    assert fast_1["ci_method"] == "wilson"
    shown = rows[reported.pk]["scores"]["fast_1"]
    assert (shown["value"], shown["ci_low"], shown["ci_high"], shown["ci_method"]) == (
        70.0,
        None,
        None,
        "n/a",
    )
    assert [rows[e.pk]["rank_tied"] for e in (reported, first, second)] == [False, False, True]
    entry_scores = client.get(f"/api/entries/{first.pk}").json()["scores"]
    geomean = next(s for s in entry_scores if s["metric"] == "speedup_geomean" and s["baseline"] == "eager")
    assert geomean["ci_method"] == "bootstrap"
    assert geomean["ci_low"] < geomean["value"] < geomean["ci_high"]


def test_computed_fast_p_at_any_p_has_its_wilson_interval(client, two_verified):
    _, first, _ = two_verified
    rows = client.get("/api/levels/2/leaderboard?view=fastp&p=1.3").json()["rows"]
    fast_p = next(row for row in rows if row["entry_id"] == first.pk)["fast_p"]
    assert fast_p["value"] == pytest.approx(20.0)  # 1.5 and 2.5 beat 1.3
    assert (fast_p["ci_low"], fast_p["ci_high"]) == pytest.approx((5.668, 50.98), abs=5e-3)


def test_html_shows_intervals_under_verified_values_and_the_tie_mark(client, two_verified):
    html = client.get("/levels/2/").content.decode()
    assert '<span class="ci" title="95% Wilson interval' in html
    assert "[10.78–60.32]" in html
    assert html.count('class="tie"') == 1


def test_csv_has_interval_columns(client, two_verified):
    reported, first, _ = two_verified
    records = {int(r["entry_id"]): r for r in csv_rows(client.get("/levels/2/export.csv").content.decode())}
    assert float(records[first.pk]["fast_1_ci_low"]) == pytest.approx(10.779, abs=1e-3)
    assert records[first.pk]["fast_1_ci_method"] == "wilson"
    assert (records[reported.pk]["fast_1_ci_low"], records[reported.pk]["fast_1_ci_method"]) == ("", "n/a")
    assert records[first.pk]["rank_tied"] == ""
