"""bench/evaluator_acceptance.py's --skip and bench/acceptance_merge.py: successive runs, one table."""

import json

from bench import acceptance_merge, evaluator_acceptance


def row(problem, verdict="correct", speedup=1.0):
    return {
        "problem": problem, "task": f"{problem.split('/')[1]}_Task", "task_path": "", "kernel_path": "",
        "input_bytes": 1, "output_bytes": 1, "verdict": verdict, "message": "", "degenerate": False,
        "flags": [], "eager_ms": 1.0 if verdict == "correct" else None, "speedup": speedup,
        "peak_gpu_reserved_gib": 1.0, "gpu_by_process": "0.5 (0.5) / 0.5 (0.5)", "peak_host_gib": 1.0,
        "scratch_gib": 0.0, "bound_gib": 3.0, "seconds": 5.0,
    }  # fmt: skip


def test_a_later_run_skips_what_an_earlier_one_judged_and_the_merge_keeps_every_problem_once(tmp_path):
    first = {"rows": [row("1/1"), row("1/2", speedup=0.9), row("2/1", verdict=evaluator_acceptance.NOT_RUN)]}
    second = {"rows": [row("1/2"), row("2/1", verdict="wrong_values"), row("1/10")]}
    paths = []
    for index, report in enumerate((first, second)):
        paths.append(tmp_path / f"run{index}.json")
        paths[-1].write_text(json.dumps(report))
    assert evaluator_acceptance.judged(str(paths[0])) == {"1/1", "1/2"}  # 2/1 was not reached
    assert evaluator_acceptance.judged(f"{paths[0]},{paths[1]}") == {"1/1", "1/2", "2/1", "1/10"}
    assert acceptance_merge.main(tmp_path / "merged", paths) == 0
    merged = json.loads((tmp_path / "merged" / "acceptance.json").read_text())
    assert [r["problem"] for r in merged["rows"]] == ["1/1", "1/2", "1/10", "2/1"]
    assert merged["rows"][1]["speedup"] == 1.0  # the later run's row
    assert merged["summary"]["verdicts"] == {"correct": 3, "wrong_values": 1}
    assert "| 1/10 |" in (tmp_path / "merged" / "acceptance.md").read_text()


def test_a_kernelbench_run_stopped_by_its_time_limit_is_no_verdict_and_says_so(tmp_path):
    stopped = row("1/4")
    stopped["kernelbench"] = {"stopped": "stopped at its 49 s limit", "correct": None, "speedup": None}
    older = row("1/5")  # a report written before the bench told a timeout apart
    older["kernelbench"] = {"compiled": False, "correct": False, "error": "TimeoutExpired(['python3'], 49.2)"}
    judged = row("1/6")
    judged["kernelbench"], judged["ratio"] = {"compiled": True, "correct": True, "speedup": 1.0}, 1.0
    summary = evaluator_acceptance.summary([stopped, older, judged])
    assert (summary["compared_with_kernelbench"], summary["same_verdict"]) == (1, 1)
    evaluator_acceptance.write_report(tmp_path, [stopped, older, judged], {})
    table = (tmp_path / "acceptance.md").read_text()
    assert table.count("stopped by its time limit") == 2
    assert "not correct" not in table


def test_the_problems_named_run_first_in_their_order_then_the_levels_take_turns():
    chosen = ["1/1", "1/2", "2/1", "3/1", "1/46", "1/96", "2/2"]
    order = evaluator_acceptance.run_order(chosen, ["1/96", "1/46"])
    assert order == ["1/96", "1/46", "1/1", "2/1", "3/1", "1/2", "2/2"]


def test_the_batch_gets_the_whole_budget_when_nothing_is_compared():
    assert evaluator_acceptance.batch_share(300, comparing=True) == 200
    assert evaluator_acceptance.batch_share(300, comparing=False) == 300
    assert evaluator_acceptance.batch_share(None, comparing=True) is None


def test_problems_are_named_one_by_one_or_as_ranges_in_the_order_given():
    named = evaluator_acceptance.named_problems("1/96,3/21-23,,2/4")
    assert named == ["1/96", "3/21", "3/22", "3/23", "2/4"]
