"""The table rules added to leaderboard.scoring: ordering with missing values last, ranks, the p grid,
fast_p curves, hack flags and which value a cell ranks by."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leaderboard import scoring

outcomes = st.lists(
    st.builds(
        scoring.TaskOutcome,
        correct=st.booleans(),
        speedup=st.one_of(st.none(), st.floats(min_value=0.01, max_value=50, allow_nan=False)),
    ),
    max_size=60,
)
maybe_numbers = st.lists(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=False)), max_size=40)


@given(outcomes, st.integers(min_value=1, max_value=200))
def test_fast_p_curve_equals_fast_p_at_every_p(found, extra):
    n_tasks = len(found) + extra
    grid = scoring.fast_p_grid()
    curve = scoring.fast_p_curve(found, n_tasks, grid)
    assert curve == [scoring.fast_p(found, p, n_tasks) for p in grid]


def test_fast_p_curve_is_strict_at_the_threshold():
    found = [scoring.TaskOutcome(True, 1.0), scoring.TaskOutcome(True, 1.2), scoring.TaskOutcome(False, 3.0)]
    assert scoring.fast_p_curve(found, 4, [0.0, 1.0, 1.2]) == [50.0, 25.0, 0.0]


@given(maybe_numbers, st.booleans())
def test_missing_values_sort_last_in_both_directions(values, descending):
    ordered = scoring.order_by_value(list(enumerate(values)), lambda item: item[1], descending)
    flags = [scoring.is_missing(value) for _, value in ordered]
    assert flags == sorted(flags)  # every present value before every missing one
    present = [value for _, value in ordered if not scoring.is_missing(value)]
    assert present == sorted(present, reverse=descending)
    assert sorted(index for index, _ in ordered) == list(range(len(values)))


def test_ties_keep_their_order():
    items = [("b", 1.0), ("a", 2.0), ("c", 1.0), ("d", None)]
    assert scoring.order_by_value(items, lambda item: item[1], True) == [
        ("a", 2.0),
        ("b", 1.0),
        ("c", 1.0),
        ("d", None),
    ]
    assert scoring.order_by_value(items, lambda item: item[1], False)[:2] == [("b", 1.0), ("c", 1.0)]


def test_competition_ranks_share_ties_and_skip_missing():
    assert scoring.competition_ranks([9.0, 7.0, 7.0, 5.0, None, math.nan]) == [1, 2, 2, 4, None, None]
    assert scoring.competition_ranks([]) == []


def test_the_p_grid_and_the_reported_metric_at_p():
    grid = scoring.fast_p_grid()
    assert grid[0] == 0.0
    assert grid[-1] == 3.0
    assert len(grid) == 61
    assert 1.35 in grid
    assert scoring.reported_fast_p_metric(1.0) == "fast_1"
    assert scoring.reported_fast_p_metric(1.2) == "fast_1_2"
    assert scoring.reported_fast_p_metric(0.0) == "correct_rate"
    assert scoring.reported_fast_p_metric(1.35) is None


def test_a_hack_flag_makes_a_result_incorrect():
    hack = [{"code": "reads_reference", "severity": "hack"}]
    suspect = [{"code": "slow_baseline", "severity": "suspect"}]
    assert scoring.task_outcome(True, 2.0, hack) == scoring.TaskOutcome(False, 2.0)
    assert scoring.task_outcome(True, 2.0, suspect) == scoring.TaskOutcome(True, 2.0)
    assert scoring.task_outcome(True, 2.0, None) == scoring.TaskOutcome(True, 2.0)


def test_a_cell_ranks_by_its_verified_value_and_shows_the_difference():
    assert scoring.headline(30.0, 50.0) == 30.0
    assert scoring.headline(None, 50.0) == 50.0
    assert scoring.difference(30.0, 50.0) == -20.0
    assert scoring.difference(None, 50.0) is None
    assert scoring.latest_verified_run([3, None, 7, 5]) == 7
    assert scoring.latest_verified_run([]) is None
    assert scoring.first_reported([12, 4, 9]) == 4


def test_fast_0_is_the_correct_rate_also_for_a_correct_kernel_whose_timing_failed():
    outcome = scoring.TaskOutcome
    found = [outcome(True, None), outcome(True, 2.0), outcome(False, None)]
    rates = scoring.aggregate(found, 4)
    assert scoring.fast_p(found, 0.0, 4) == rates["correct_rate"].value == 50.0
    assert scoring.fast_p_curve(found, 4, [0.0, 0.05]) == [50.0, 25.0]


def test_more_outcomes_than_tasks_is_refused_not_turned_into_a_rate_over_100():
    found = [scoring.TaskOutcome(True, 2.0)] * 3
    with pytest.raises(ValueError, match="3 outcomes for 2 tasks"):
        scoring.aggregate(found, 2)
    with pytest.raises(ValueError, match="3 outcomes for 2 tasks"):
        scoring.fast_p_curve(found, 2, [1.0])


def test_absurd_but_finite_speedups_aggregate_without_overflow():
    found = [scoring.TaskOutcome(True, 1e308), scoring.TaskOutcome(True, 1e308)]
    result = scoring.aggregate(found, 2)
    assert result["speedup_mean"].value == result["speedup_median"].value == 1e308
    assert math.isfinite(result["speedup_geomean"].value)


def test_the_penalised_geomean_keeps_a_slow_correct_kernel_below_1x():
    slow = [scoring.TaskOutcome(True, 0.5), scoring.TaskOutcome(False, None)]
    assert scoring.aggregate(slow, 2)["speedup_geomean_all"].value == pytest.approx(0.5**0.5)
