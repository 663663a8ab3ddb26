"""KernelBench's eval_results.json: a verified run exported (API and command) in KernelBench's layout, a
file imported as reported per-task results whose fast_p at any p is computed, and malformed files refused
whole."""

import json

import pytest
from django.core.management import CommandError, call_command

from leaderboard.models import Entry, Method, Pairing, ReportedTaskResult, Score
from tests.leaderboard import factories

SAMPLE_KEYS = {
    "sample_id",
    "compiled",
    "correctness",
    "metadata",
    "runtime",
    "runtime_stats",
    "ref_runtime",
    "ref_runtime_stats",
}
GOOD_FILE = {
    "1": [{"sample_id": 0, "compiled": True, "correctness": True, "runtime": 1.0, "ref_runtime": 2.0}],
    "2": [
        {"sample_id": 0, "compiled": True, "correctness": True, "runtime": 2.0, "ref_runtime": 2.4},
        {"sample_id": 1, "compiled": True, "correctness": False, "runtime": -1.0},
    ],
    "3": [{"sample_id": 0, "compiled": True, "correctness": False, "runtime": -1.0, "metadata": {"x": 1}}],
    "4": {"sample_id": 0, "compiled": True, "correctness": True, "runtime": 4.0, "ref_runtime": 3.0},
}
"""Level 2 (100 tasks): speedups 2.0, 1.2 and 0.75 of three correct kernels; problem 4 in the older layout."""


def write(tmp_path, data, name="eval_results.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def import_good(tmp_path, **extra):
    options = {
        "method": "Imported-Agent",
        "hardware": "H100",
        "level": 2,
        "citation": "https://example.org/run",
    }
    call_command("import_eval_results", write(tmp_path, GOOD_FILE), **(options | extra), stdout=None)
    return Entry.objects.get(method__name="Imported-Agent", data_source="KernelBench eval_results.json")


@pytest.fixture
def verified(db):
    entry = factories.entry("Exported", gpu="H100")
    factories.verified_run(entry, factories.FIVE_FAST, n_tasks=10, extra_samples=1)
    return entry


def test_api_exports_the_shown_run_in_kernelbench_layout(client, verified):
    response = client.get(f"/api/entries/{verified.pk}/eval_results.json")
    assert response.status_code == 200
    data = response.json()
    assert list(data) == ["1", "2", "3", "4", "5"]
    assert [len(samples) for samples in data.values()] == [2, 2, 2, 2, 2]  # sample 0 and 1
    first = data["1"][0]
    assert set(first) == SAMPLE_KEYS
    assert (first["sample_id"], first["compiled"], first["correctness"]) == (0, True, True)
    assert (first["runtime"], first["ref_runtime"]) == (-1.0, 2.1)  # kernel untimed here; eager mean 2.1 ms
    assert first["metadata"]["speedup_eager"] == 1.5
    assert first["metadata"]["task"] == "level_2_problem_1"
    assert [data[k][0]["correctness"] for k in data] == [True, True, True, False, True]


def test_export_command_writes_the_same_file(tmp_path, client, verified):
    out = tmp_path / "out.json"
    call_command("export_eval_results", verified.pk, "-o", str(out), stderr=None)
    assert json.loads(out.read_text()) == client.get(f"/api/entries/{verified.pk}/eval_results.json").json()


def test_export_of_an_entry_without_a_verified_run_is_refused(client, db):
    reported = factories.entry("Paper")
    factories.reported(reported, "fast_1", 10.0)
    assert client.get(f"/api/entries/{reported.pk}/eval_results.json").status_code == 404
    assert client.get("/api/entries/999999/eval_results.json").status_code == 404
    with pytest.raises(CommandError, match="no verified run"):
        call_command("export_eval_results", reported.pk)


def test_import_stores_per_task_results_and_reported_scores_with_intervals(tmp_path, db):
    entry = import_good(tmp_path)
    assert (entry.level.number, entry.hardware.name, entry.n_tasks) == (2, "H100", 100)
    assert ReportedTaskResult.objects.filter(entry=entry).count() == 5
    speedups = ReportedTaskResult.objects.filter(entry=entry, sample_id=0).values_list("speedup", flat=True)
    assert [round(v, 6) if v is not None else None for v in speedups] == [2.0, 1.2, None, 0.75]
    scores = {s.metric_id: s for s in Score.objects.filter(entry=entry)}
    assert {s.provenance for s in scores.values()} == {"reported"}
    assert scores["fast_1"].value == pytest.approx(2.0)  # 2.0 and 1.2 of 100 tasks
    assert scores["correct_rate"].value == pytest.approx(3.0)
    assert (scores["fast_1"].ci_low, scores["fast_1"].ci_high) == pytest.approx((0.5502, 7.0012), abs=1e-3)
    assert scores["fast_1"].source.url == "https://example.org/run"
    assert scores["speedup_mean"].value == pytest.approx((2.0 + 1.2 + 0.75) / 3)


def test_reimporting_the_same_file_replaces_it(tmp_path, db):
    first = import_good(tmp_path)
    second = import_good(tmp_path)
    assert first.pk == second.pk
    assert ReportedTaskResult.objects.filter(entry=first).count() == 5
    assert Score.objects.filter(entry=first, metric_id="fast_1").count() == 1


def test_imported_fast_p_at_any_p_is_computed_and_labelled_reported(tmp_path, client, db):
    entry = import_good(tmp_path)
    rows = client.get("/api/levels/2/leaderboard?view=fastp&p=0.7").json()["rows"]
    fast_p = next(row for row in rows if row["entry_id"] == entry.pk)["fast_p"]
    assert fast_p["value"] == pytest.approx(3.0)  # 2.0, 1.2 and 0.75 beat 0.7
    assert fast_p["provenance"] == "reported"
    assert fast_p["verified"] is None
    assert (fast_p["ci_low"], fast_p["ci_high"], fast_p["ci_method"]) == pytest.approx(
        (1.0255, 8.4519, "wilson"), abs=1e-3
    )


def test_import_pairs_a_verified_entry_of_the_method(tmp_path, db):
    method = factories.method("Imported-Agent")
    verified = factories.entry(method=method, label="verified one")
    factories.verified_run(verified, factories.FIVE_FAST, gpu="H100", n_tasks=10)
    entry = import_good(tmp_path)
    assert Pairing.objects.get(verified=verified).reported == entry


def test_baseline_times_file_gives_reference_times(tmp_path, db):
    data = {"1": [{"sample_id": 0, "compiled": True, "correctness": True, "runtime": 1.5}]}
    times = {"level2": {"1_Conv2d_ReLU.py": {"mean": 3.0, "std": 0.1}}}
    call_command(
        "import_eval_results",
        write(tmp_path, data),
        method="Timed",
        hardware="H100",
        level=2,
        baseline_times=write(tmp_path, times, "baseline_time_torch.json"),
        stdout=None,
    )
    assert ReportedTaskResult.objects.get(entry__method__name="Timed").speedup == pytest.approx(2.0)


def bad(sample_patch):
    return {"1": [{"sample_id": 0, "compiled": True, "correctness": True, "runtime": 1.0} | sample_patch]}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ([], "non-empty object"),
        ({"abc": []}, "'abc' is not a whole number"),
        ({"101": bad({})["1"]}, "outside the level's 1–100"),
        ({"0": bad({})["1"]}, "outside"),
        (bad({"correctness": "yes"}), "must be true or false"),
        (bad({"compiled": False}), "correct but not compiled"),
        (bad({"runtime": "fast"}), "positive number or -1.0"),
        (bad({"sample_id": -1}), "sample_id must be"),
        ({"1": [bad({})["1"][0], bad({})["1"][0]]}, "appears twice"),
        ({"1": [bad({"sample_id": 1})["1"][0]]}, "no problem has a sample 0"),
        ({"1": "x"}, "expected a list of samples"),
    ],
)
def test_malformed_files_are_refused_and_nothing_is_stored(tmp_path, db, content, message):
    entries, methods = Entry.objects.count(), Method.objects.count()
    path = write(tmp_path, content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(CommandError, match=message):
        call_command("import_eval_results", path, method="Bad", hardware="H100", level=2)
    assert (Entry.objects.count(), Method.objects.count()) == (entries, methods)
    assert not ReportedTaskResult.objects.exists()
