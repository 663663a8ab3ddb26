"""bench/round_spells.py: each round's median in the order the rounds ran; the results a spell unsteadied."""

import json

import pytest

from bench import round_spells


def result(candidate: list[float], eager: list[float], sizes: list[int], speedup: float) -> dict:
    return {
        "runtime_ms": {"samples": candidate},
        "baseline_ms": {"eager": {"samples": eager}},
        "speedup": {"eager": speedup},
        "timing": {"round_calls": 20, "round_sizes": sizes},
    }


def test_rounds_are_laid_out_in_the_order_they_ran_and_over_each_side_s_fastest():
    candidate = [15.0, 15.0, 10.0, 10.0, 10.0, 10.0]  # rounds of 2: the first ran in a slow spell
    eager = [10.0, 10.0, 10.0, 10.0, 20.0, 20.0]  # its third round did
    row = round_spells.spells(result(candidate, eager, [2, 2, 2], 0.9), "eager")
    # round 0: candidate first; round 1: the reference first; round 2: the candidate first again
    assert row["order"] == "C1.50 B1.00 B1.00 C1.00 C1.00 B2.00"
    assert row["spread"] == {"C": 1.5, "B": 2.0}
    assert row["rounds_per_side"] == 3
    assert row["best_round_speedup"] == 1.0  # 10 ms at best on both sides


def test_the_summary_counts_the_unsteady_results(tmp_path):
    steady = result([1.0] * 8, [1.0] * 8, [4, 4], 1.0)
    unsteady = result([1.0] * 4 + [1.2] * 4, [1.0] * 8, [4, 4], 0.9)
    (tmp_path / "steady.json").write_text(json.dumps(steady))
    (tmp_path / "unsteady.json").write_text(json.dumps(unsteady))
    per_file = {
        path.stem: round_spells.spells(json.loads(path.read_text()), "eager")
        for path in round_spells.result_files([tmp_path])
    }
    report = round_spells.summary(per_file, 1.05)
    assert (report["results"], report["unsteady"]) == (2, 1)
    assert report["unsteady_speedups"] == {"unsteady": 0.9}
    assert report["unsteady_best_round_speedups"] == {"unsteady": 1.0}
    within = {"speedup": 1, "pooled_speedup": 1, "round_pairs_speedup": 1, "best_round_speedup": 2}
    assert report["within_3pct"] == within
    # replayed from the samples: each side's median over all calls, and the median of the two rounds' ratios
    assert per_file["unsteady"]["pooled_speedup"] == pytest.approx(1.0 / 1.1)
    assert per_file["unsteady"]["round_pairs_speedup"] == pytest.approx((1.0 + 1.0 / 1.2) / 2)


def test_a_result_without_baseline_samples_is_left_out():
    assert round_spells.spells({"runtime_ms": {"samples": [1.0]}, "baseline_ms": {}}, "eager") is None
