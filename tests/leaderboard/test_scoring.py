"""The aggregation rules every table, export and verified score relies on."""

import math

import pytest

from leaderboard.scoring import (
    TaskOutcome,
    aggregate,
    bootstrap_ci,
    fast_p,
    fast_p_metric_id,
    geomean,
    is_rankable,
    lane,
    parse_p,
    penalised_speedups,
    rate_denominator,
    separate_lane_reasons,
    sort_key,
)

OUTCOMES = [
    TaskOutcome(True, 2.0),
    TaskOutcome(True, 1.0),  # exactly at p=1: not counted by strict >
    TaskOutcome(True, 0.5),
    TaskOutcome(False, None),
    TaskOutcome(True, None),  # correct but timing failed: in the correct rate (fast_0) only
]


def test_fast_p_is_strict_over_all_tasks():
    assert fast_p(OUTCOMES, 1.0, n_tasks=10) == 10.0
    assert fast_p(OUTCOMES, 1.0, n_tasks=10, op=">=") == 20.0
    assert fast_p(OUTCOMES, 0.0, n_tasks=10) == 40.0  # fast_0 is the correct rate
    assert fast_p(OUTCOMES, 0.05, n_tasks=10) == 30.0
    assert fast_p(OUTCOMES, 2.0, n_tasks=10) == 0.0
    with pytest.raises(ValueError, match="n_tasks"):
        fast_p(OUTCOMES, 1.0, n_tasks=0)


def test_rates_are_over_the_whole_level_and_never_fewer_tasks_than_results():
    assert rate_denominator(100, OUTCOMES) == 100  # the 95 tasks without a result count as misses
    assert rate_denominator(3, OUTCOMES) == 5  # tasks that left the suite still count once each
    assert fast_p(OUTCOMES, 1.0, rate_denominator(100, OUTCOMES)) == 1.0


def test_geomeans():
    assert geomean([]) is None
    assert geomean([4.0, 1.0]) == pytest.approx(2.0)
    assert penalised_speedups(OUTCOMES, n_tasks=7) == [2.0, 1.0, 0.5, 1.0, 1.0, 1.0, 1.0]


def test_aggregate_of_a_run():
    result = aggregate(OUTCOMES, n_tasks=5)
    assert result["fast_1"].value == 20.0
    assert result["fast_1"].threshold_op == ">"
    assert result["correct_rate"].value == 80.0
    assert result["speedup_geomean"].value == pytest.approx(1.0)
    assert result["speedup_geomean"].denominator == "correct_only"
    assert result["speedup_mean"].value == pytest.approx(3.5 / 3)
    assert (result["speedup_min"].value, result["speedup_max"].value) == (0.5, 2.0)
    assert result["speedup_median"].value == 1.0
    assert result["pct_faster"].value == pytest.approx(100 / 3)
    assert result["pct_slower"].value == pytest.approx(100 / 3)
    assert result["speedup_geomean_all"].value == pytest.approx(1.0)
    low, high = result["speedup_geomean"].ci_low, result["speedup_geomean"].ci_high
    assert low <= result["speedup_geomean"].value <= high


def test_aggregate_without_a_correct_kernel_has_no_speedups():
    result = aggregate([TaskOutcome(False, None)] * 3, n_tasks=3)
    assert result["fast_1"].value == 0.0
    assert result["speedup_geomean_all"].value == 1.0
    assert "speedup_geomean" not in result


def test_bootstrap_is_reproducible_and_needs_two_values():
    values = [1.1, 0.9, 2.5, 1.7, 0.8]
    assert bootstrap_ci(values) == bootstrap_ci(values)
    assert bootstrap_ci([2.0]) == (None, None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.5", 1.5),
        ("1.52", 1.5),
        ("7", 3.0),
        ("-1", 0.0),
        ("abc", 1.0),
        ("", 1.0),
        (None, 1.0),
        ("nan", 1.0),
    ],
)
def test_parse_p_snaps_and_clamps(text, expected):
    assert parse_p(text) == expected


def test_metric_ids_of_p():
    assert [fast_p_metric_id(p) for p in (1.0, 1.2, 2.0, 0.85, 0)] == [
        "fast_1", "fast_1_2", "fast_2", "fast_0_85", "fast_0"
    ]  # fmt: skip


def test_missing_values_sort_last_both_ways():
    values = [1.0, None, 3.0, math.nan, 2.0]
    assert sorted(values, key=lambda v: sort_key(v, descending=True))[:3] == [3.0, 2.0, 1.0]
    assert sorted(values, key=lambda v: sort_key(v, descending=False))[:3] == [1.0, 2.0, 3.0]


def test_only_visible_and_flagged_rank():
    assert [is_rankable(s) for s in ("visible", "flagged", "hacked", "hidden")] == [True, True, False, False]


def test_only_gpu_runs_over_the_ranking_suite_rank_beside_reported_scores():
    assert lane("kernelbench", "cuda") == "ranking"
    assert separate_lane_reasons("kernelbench", "cuda") == []
    assert lane("kernelbench", "cpu") == "separate"
    assert lane("builtin", "cuda") == "separate"
    assert separate_lane_reasons("builtin", "cpu") == [
        "verified over the builtin suite, not the whole KernelBench level",
        "CPU timing, not a GPU verification",
    ]
