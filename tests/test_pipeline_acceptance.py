"""bench/pipeline_acceptance.py: a bundle's per-task verdicts, speedups and memory against the bound."""

import json

from bench import pipeline_acceptance

GiB = 1 << 30


def result(name, correct=True, speedup=1.0, gpu_gib=(1.0, 1.0), output_gib=1.0):
    return {
        "name": name,
        "correct": correct,
        "error": None if correct else "wrong_values",
        "flags": [{"code": "pytorch_only", "severity": "info"}],
        "speedup_eager": speedup if correct else None,
        "eager_ms": {"median": 2.0},
        "durations_s": {"total": 5.0},
        "resources": {
            "input_bytes": GiB,
            "output_bytes": int(output_gib * GiB),
            "parameter_bytes": 0,
            "scratch_bytes": 0,
            "peak": {
                "kernel": {
                    "gpu_reserved_bytes": int(gpu_gib[0] * GiB),
                    "gpu_allocated_bytes": int(gpu_gib[0] * GiB) // 2,
                    "host_bytes": GiB,
                },
                "reference": {"gpu_reserved_bytes": int(gpu_gib[1] * GiB), "host_bytes": GiB},
            },
        },
    }


def test_the_table_lists_every_task_and_the_summary_counts_verdicts_speedups_and_the_bound(tmp_path):
    report = [
        {
            "submission": 1,
            "level": 2,
            "results": [
                result("10_Wide", gpu_gib=(3.0, 3.5)),  # bound: 2 × (1 + 1) + 2 = 6 GiB
                result("2_Fast", speedup=1.005),
                result("3_Off", speedup=0.95),
                result("4_Wrong", correct=False),
            ],
        }
    ]
    source, target = tmp_path / "gpu_check.json", tmp_path / "acceptance.md"
    source.write_text(json.dumps(report))
    assert pipeline_acceptance.main(source, target) == 0
    text = target.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "task" not in line]
    assert [row.split(" | ")[0] for row in rows] == ["| 2_Fast", "| 3_Off", "| 4_Wrong", "| 10_Wide"]
    facts = json.loads(text.split("```")[1])
    assert facts["tasks"] == 4
    assert facts["correct"] == 3
    assert facts["eager_speedup_within_3pct"] == 2
    assert facts["eager_speedup_within_1pct"] == 2
    assert facts["gpu_peak_over_bound"] == ["10_Wide"]
    assert "wrong_values" in rows[2]
    assert "| 3.0 (1.5) / 3.5 |" in rows[3]  # each process: reserved (allocated), where reported


def test_where_the_time_goes_sets_each_kernel_total_against_its_timed_calls():
    timed = {
        "runtime_ms": {"samples": [500.0, 500.0]},  # 1 s
        "baseline_ms": {"eager": {"samples": [1000.0]}, "compile": None},  # 1 s
    }
    results = [
        {**result("1_A"), **timed, "durations_s": {"total": 6.0, "import_model": 0.5}},  # 4 s beyond
        {**result("2_B"), **timed, "durations_s": {"total": 9.0, "import_model": 1.5}},  # 7 s beyond
        {**result("3_C", correct=False), **timed, "durations_s": {"total": 1.0}},  # not counted
        {**result("4_D"), "durations_s": {"total": 3.0}},  # no samples: not in the beyond figures
    ]
    facts = pipeline_acceptance.where_time_goes(results)
    assert facts["beyond_timed_median_s"] == 5.5
    assert facts["beyond_timed_within_5s"] == 1
    assert facts["beyond_timed_of"] == 2
    assert facts["durations_median_s"] == {"import_model": 1.0, "total": 6.0}


def test_where_the_time_goes_takes_each_side_s_round_figures_median_over_the_kernels():
    def went(candidate_call: float, reference_call: float) -> dict:
        sides = {
            "candidate": {"reported_call": candidate_call},
            "reference": {"reported_call": reference_call},
        }
        return {**result("1_A"), "timing": {"rounds_ms": sides}}

    results = [went(10.0, 4.0), went(30.0, 8.0), {**result("3_C"), "timing": {}}]
    results[1]["timing"]["rounds_ms"]["candidate"]["reported_check"] = 5.0
    facts = pipeline_acceptance.where_time_goes(results)
    assert facts["rounds_median_ms"]["candidate"] == {"reported_call": 20.0, "reported_check": 5.0}
    assert facts["rounds_median_ms"]["reference"] == {"reported_call": 6.0}
