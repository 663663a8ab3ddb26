"""The almanac import: every seed row and value lands exactly, re-import changes nothing, bad files fail."""

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from leaderboard.models import Entry, Method, Score, Source

SEED = Path(__file__).resolve().parents[2] / "leaderboard" / "seed"
L2_SEED = SEED / "almanac_kernelbench_l2.txt"
L3_SEED = SEED / "almanac_kernelbench_l3.txt"
COLUMNS = [
    "fast_1", "correct_rate", "speedup_mean", "speedup_geomean", "speedup_median", "speedup_min",
    "speedup_max", "pct_faster", "pct_slower", "success_rate", "fast_1_2", "fast_1_5", "fast_2",
]  # fmt: skip


def seed_rows():
    """The L2 seed's table rows, split naively: (method cell, {metric: text}) for every non-missing cell."""
    lines = L2_SEED.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Method |")) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("| "):
            break
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        rows.append(
            (cells[0], {m: text for m, text in zip(COLUMNS, cells[1:14], strict=True) if text != "—"})
        )
    return rows


def scores_of(entry):
    return {score.metric_id: score for score in entry.scores.all()}


def test_every_l2_row_and_value_lands_exactly(seeded):
    rows = seed_rows()
    assert len(rows) == 34
    assert Entry.objects.filter(level__number=2).count() == len(rows)
    for method_cell, values in rows:
        entry = Entry.objects.get(import_key=f"almanac:L2:{method_cell}")
        stored = scores_of(entry)
        assert set(stored) == set(values), method_cell
        for metric_id, text in values.items():
            assert stored[metric_id].value == float(text), (method_cell, metric_id)
            assert stored[metric_id].as_written == text
            assert stored[metric_id].provenance == "reported"
            assert stored[metric_id].source.title.startswith("Benchmark Almanac")


def test_examples_from_the_issue(seeded):
    davinci = Entry.objects.get(label="daVinci-kernel-14B")
    assert davinci.method.backbone == "Qwen3-14B-Base"
    assert davinci.date_label == "2026.06"
    assert {k: s.value for k, s in scores_of(davinci).items()} == {
        "fast_1": 70.6, "fast_1_2": 27.1, "fast_1_5": 11.4, "fast_2": 6.2
    }  # fmt: skip
    blaster = Entry.objects.get(label="KERNELBLASTER", hardware__name="H100")
    assert blaster.method.name == "KernelBlaster"
    assert scores_of(blaster)["correct_rate"].value == 81
    assert scores_of(blaster)["speedup_max"].value == 213.65


def test_metadata_is_taken_apart(seeded):
    claude = Entry.objects.get(label="Claude-4.5-Sonnet*")
    assert claude.method.name == "Claude-4.5-Sonnet"
    assert (claude.mode, claude.data_source) == ("zero-shot", "Dr. Kernel paper")
    assert "multi-turn" in claude.notes
    reproduced = Entry.objects.get(label="Dr. Kernel-14B (reproduce)")
    assert reproduced.reproduce
    assert reproduced.method.name == "Dr. Kernel-14B"
    sakana = Entry.objects.get(label="AI CUDA Engineer", hardware__name="L40S")
    assert sakana.hyperparameters == [
        "10 generations",
        "8 proposals sampled per generation",
        "top 4 evaluated",
    ]
    assert sakana.method.agent_models == "O4-mini, Claude 3.7 Sonnet, Gemini 2.5 Pro, GPT-4.1, and O3"
    foundry = Entry.objects.get(label="KernelFoundry")
    assert (foundry.task_subset, foundry.n_tasks, foundry.hardware.name) == (
        "40-task subset",
        40,
        "RTX A6000",
    )
    assert Entry.objects.get(label="KernelBlaster").n_tasks == 100
    assert set(Entry.objects.filter(level__number=2).values_list("hardware__name", flat=True)) - {None} == {
        "L40S", "H100", "H200", "A100", "RTX 6000", "RTX A6000"
    }  # fmt: skip


def test_mixed_speedup_column_keeps_its_type_per_value(seeded):
    def aggregation(label, **lookup):
        return Score.objects.get(entry__label=label, metric_id="speedup_mean", **lookup).aggregation

    assert aggregation("KernelBlaster") == "geometric"
    assert aggregation("KernelPro") == "geometric"
    assert aggregation("StitchCUDA") == "arithmetic"
    assert aggregation("KERNELBLASTER", entry__hardware__name="H100") == "arithmetic"
    assert aggregation("KernelFoundry") == "unstated"


def test_fast_p_conventions_are_recorded(seeded):
    score = Score.objects.get(entry__label="daVinci-kernel-14B", metric_id="fast_1")
    assert (score.threshold_op, score.denominator, score.baseline) == (">=", "all_samples", "eager")


def test_level_3_launch_posts(seeded):
    glm = scores_of(Entry.objects.get(label="GLM-5.1"))
    assert set(glm) == {"speedup_geomean"}
    assert (glm["speedup_geomean"].value, glm["speedup_geomean"].baseline) == (3.6, "eager")
    assert glm["speedup_geomean"].as_written == "KernelBench Level 3, 3.6x geometric mean speedup"
    plus = scores_of(Entry.objects.get(label="Qwen3.7-Plus"))
    assert (plus["speedup_median"].value, plus["speedup_median"].baseline) == (2.06, "compile")
    assert (plus["pct_faster"].value, plus["pct_faster"].baseline) == (98, "compile")
    assert "share faster than torch.compile" in plus["speedup_median"].as_written
    max_ = scores_of(Entry.objects.get(label="Qwen3.7-Max"))
    assert (max_["speedup_median"].value, max_["speedup_median"].baseline) == (1.98, "unstated")
    assert max_["speedup_median"].as_written == "Kernel Bench L3"
    assert Source.objects.get(title="Qwen3.7-Plus launch post").published.isoformat() == "2026-06-01"


def test_facts_from_the_catalogue_say_so_on_the_entry_page(seeded, client):
    glm = Entry.objects.get(label="GLM-5.1")
    assert glm.metadata["from the catalogue"].startswith("hardware H100, 50 tasks, baseline eager (")
    max_ = Entry.objects.get(label="Qwen3.7-Max").metadata["from the catalogue"]
    assert max_.startswith("baseline unstated (")  # the catalogue's reading that the post states none
    page = client.get(f"/entries/{glm.pk}/").content.decode()
    assert "hardware H100, 50 tasks, baseline eager" in page
    assert "All 50 L3 problems" in page  # the catalogue's note


def database_state():
    history = sum(model.history.count() for model in (Method, Entry, Score))
    scores = sorted(Score.objects.values_list("entry__import_key", "metric_id", "value", "as_written"))
    return Entry.objects.count(), Method.objects.count(), Source.objects.count(), history, scores


@pytest.mark.django_db
def test_reimport_changes_nothing():
    call_command("import_almanac", str(L2_SEED), verbosity=0)
    call_command("import_almanac", str(L3_SEED), verbosity=0)
    before = database_state()
    call_command("import_almanac", str(L2_SEED), verbosity=0)
    call_command("import_almanac", str(L3_SEED), verbosity=0)
    assert database_state() == before


@pytest.mark.django_db
def test_reimport_keeps_curation_and_records_a_changed_value(tmp_path):
    call_command("import_almanac", str(L2_SEED), verbosity=0)
    score = Score.objects.get(entry__label="daVinci-kernel-14B", metric_id="fast_1")
    score.state, score.state_reason = "flagged", "check against the paper"
    score.save()
    changed = tmp_path / "l2.txt"
    changed.write_text(L2_SEED.read_text().replace("| 70.6 |", "| 70.7 |"))
    call_command("import_almanac", str(changed), verbosity=0)
    score.refresh_from_db()
    assert (score.value, score.state) == (70.7, "flagged")
    assert list(score.history.values_list("value", flat=True))[:2] == [70.7, 70.6]


BROKEN = [
    ("| 70.6 |", "| 70,6 |", "line 6: column 1 (fast_1): '70,6' is neither a number nor —"),
    (
        "Base2026.06 |",
        "Base |",
        "line 6: method cell 'daVinci-kernel-14Bbackbone=Qwen3-14B-Base' does not end",
    ),
    ("| 6.2 | |", "| 6.2 |", None),  # the trailing empty column may be absent
    ("| 11.4 | 6.2 |", "| 6.2 |", "line 6: expected 14 cells (method + 13 values), found 13"),
    ("backbone=Qwen3-14B", "bakbone=Qwen3-14B", "line 6: unknown metadata key before '='"),
    ("mode=zero-shot, data_source", "mode=zero-shot, source", "line 8: unknown metadata key inside"),
    (
        "2026.06 |",
        "2026.13 |",
        "line 6: method cell 'daVinci-kernel-14Bbackbone=Qwen3-14B-Base2026.13': month",
    ),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("old", "new", "message"), BROKEN)
def test_malformed_file_names_the_line_and_writes_nothing(tmp_path, old, new, message):
    broken = tmp_path / "broken.txt"
    broken.write_text(L2_SEED.read_text().replace(old, new, 1))
    if message is None:
        call_command("import_almanac", str(broken), verbosity=0)
        assert Entry.objects.count() == 34
        return
    with pytest.raises(CommandError) as raised:
        call_command("import_almanac", str(broken), verbosity=0)
    assert message in str(raised.value)
    assert (Entry.objects.count(), Score.objects.count(), Method.objects.count()) == (0, 0, 0)


@pytest.mark.django_db
def test_unknown_format_and_unreadable_file(tmp_path):
    other = tmp_path / "other.txt"
    other.write_text("just some text\n")
    with pytest.raises(CommandError, match="line 1: neither an almanac level table"):
        call_command("import_almanac", str(other))
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(CommandError, match="cannot read"):
        call_command("import_almanac", str(binary))


@pytest.mark.django_db
def test_launch_post_without_a_readable_metric_is_rejected(tmp_path):
    broken = tmp_path / "l3.txt"
    broken.write_text(L3_SEED.read_text().replace("May 20, 2026 Qwen3.7-Max", "May 20, 2026 Qwen3.9-Ultra"))
    with pytest.raises(CommandError, match=r"line 48: cannot tell which metric Qwen3.9-Ultra"):
        call_command("import_almanac", str(broken))
    assert Entry.objects.count() == 0
