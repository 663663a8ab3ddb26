"""The CSV importer of reported scores: documented columns, idempotent, every bad line named."""

import pytest
from django.core.management import CommandError, call_command

from leaderboard.models import Entry, Score

HEADER = (
    "level,method,metric,value,source_title,arxiv_id,table,hardware,baseline,date,threshold_op,denominator\n"
)
ROWS = [
    "2,Dr. Kernel-14B,fast_1,23.5,Dr. Kernel paper,2602.05885,Table 2,H100,compile,2026.02,>=,all_samples\n",
    "2,Dr. Kernel-14B,fast_1_2,1.9,Dr. Kernel paper,2602.05885,Table 2,H100,compile,2026.02,>=,all_samples\n",
    "1,GPT-5,fast_1,19.5,Dr. Kernel paper,2602.05885,Table 1,H100,eager,2026.02,>=,all_samples\n",
]


@pytest.fixture
def csv_file(tmp_path):
    def write(*lines):
        path = tmp_path / "scores.csv"
        path.write_text("".join(lines))
        return str(path)

    return write


@pytest.mark.django_db
def test_rows_become_reported_scores_on_one_entry_per_configuration(csv_file):
    call_command("import_scores", csv_file(HEADER, *ROWS), verbosity=0)
    compile_entry = Entry.objects.get(method__name="Dr. Kernel-14B", level__number=2)
    assert compile_entry.baseline == "compile"
    assert compile_entry.hardware.name == "H100"
    assert compile_entry.date_label == "2026.02"
    scores = {s.metric_id: s for s in compile_entry.scores.all()}
    assert (scores["fast_1"].value, scores["fast_1"].source.arxiv_id, scores["fast_1"].source_table) == (
        23.5,
        "2602.05885",
        "Table 2",
    )
    assert (scores["fast_1"].threshold_op, scores["fast_1"].denominator) == (">=", "all_samples")
    assert Entry.objects.get(method__name="GPT-5").level.number == 1


@pytest.mark.django_db
def test_reimport_is_idempotent(csv_file):
    path = csv_file(HEADER, *ROWS)
    call_command("import_scores", path, verbosity=0)
    before = (Entry.objects.count(), Score.objects.count(), Score.history.count())
    call_command("import_scores", path, verbosity=0)
    assert (Entry.objects.count(), Score.objects.count(), Score.history.count()) == before


@pytest.mark.django_db
def test_every_bad_line_is_named_and_nothing_is_written(csv_file):
    bad = [
        ROWS[0],
        "9,X,fast_9,abc,,,,,,,,\n",
        "2,Y,fast_1,1,S,,,,sideways,2026.13,>>,nobody\n",
        "2,Z,fast_1,nan,S,,,,,,,\n",
    ]
    with pytest.raises(CommandError) as raised:
        call_command("import_scores", csv_file(HEADER, *bad))
    message = str(raised.value)
    for expected in [
        "line 3: level must be 1, 2 or 3, not 9",
        "line 3: unknown metric 'fast_9'",
        "line 3: value: 'abc' is not a valid value",
        "line 3: source_title is empty",
        "line 4: baseline must be one of",
        "line 4: date: '2026.13' is not a valid date",
        "line 4: threshold_op must be one of",
        "line 4: denominator must be one of",
        "line 5: value: 'nan' is not a valid value",
    ]:
        assert expected in message
    assert Score.objects.count() == 0


@pytest.mark.django_db
def test_missing_and_unknown_columns(csv_file):
    with pytest.raises(CommandError, match="line 1: missing columns: value, source_title"):
        call_command("import_scores", csv_file("level,method,metric\n2,X,fast_1\n"))
    with pytest.raises(CommandError, match="line 1: unknown columns: colour"):
        call_command("import_scores", csv_file(HEADER.strip() + ",colour\n"))
