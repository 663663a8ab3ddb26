"""bench/round_first_calls.py: a cost only each round's first call pays is found, and on which side."""

import json

from bench import round_first_calls


def result(candidate: list[float], eager: list[float], round_calls: int | None = 4) -> dict:
    return {
        "runtime_ms": {"samples": candidate},
        "baseline_ms": {"eager": {"samples": eager}, "compile": None},
        "timing": {"round_calls": round_calls},
    }


def test_the_first_call_of_every_round_after_the_first_is_set_against_the_rest_of_its_round():
    samples = [9.0, 1.0, 1.0, 1.0, 3.0, 1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 5.0]  # the last round: one call
    assert round_first_calls.round_ratios(samples, [4, 4, 4, 1]) == [3.0, 2.0]


def test_the_sides_are_told_apart_and_the_round_size_comes_from_the_result(tmp_path):
    steady = [1.0] * 12
    slow_first = [1.0, 1.0, 1.0, 1.0, 4.0, 1.0, 1.0, 1.0, 4.0, 1.0, 1.0, 1.0]
    (tmp_path / "a.json").write_text(json.dumps(result(steady, slow_first)))
    (tmp_path / "environment.json").write_text("{}")
    per_file = {
        str(path): round_first_calls.first_call_ratios(json.loads(path.read_text()), 20)
        for path in round_first_calls.result_files([tmp_path])
    }
    assert list(per_file.values()) == [{"candidate": 1.0, "eager": 4.0}]
    summary = round_first_calls.summary(per_file)
    assert summary["baseline"]["median"] == 4.0
    assert summary["candidate"]["max"] == 1.0


def test_a_result_without_its_round_size_uses_the_default():
    samples = [1.0] * 5 + [2.0] + [1.0] * 4
    assert round_first_calls.first_call_ratios(result(samples, samples, None), 5) == {
        "candidate": 2.0,
        "eager": 2.0,
    }


def test_rounds_of_different_sizes_are_cut_where_the_result_says():
    samples = [9.0, 1.0, 1.0, 1.0, 6.0, 2.0, 2.0, 3.0, 1.0, 1.0, 1.0, 1.0]
    recorded = {**result(samples, samples), "timing": {"round_calls": 20, "round_sizes": [4, 3, 5]}}
    assert round_first_calls.round_sizes(recorded, len(samples), 20) == [4, 3, 5]
    assert round_first_calls.rounds_of(samples, [4, 3, 5])[1] == [6.0, 2.0, 2.0]
    assert round_first_calls.first_call_ratios(recorded, 20) == {"candidate": 3.0, "eager": 3.0}
