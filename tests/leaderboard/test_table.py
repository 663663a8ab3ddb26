"""The table builder: eligibility, ordering with missing values last, filters, the p control, provenance."""

import datetime

import pytest
from django.http import QueryDict

from leaderboard import scoring
from leaderboard.table import TableQuery, build_table
from leaderboard.views.params import BadQuery, parse_query
from leaderboard.views.text import cell_title
from tests.leaderboard import factories


@pytest.fixture
def board(db):
    return factories.make_board()


def names(table) -> list[str]:
    return [row.name for row in table.all_rows]


def table_for(text: str = "", level: int = 2, paginate: bool = True):
    return build_table(level, parse_query(QueryDict(text)), paginate=paginate)


def test_fast1_view_ranks_by_fast1_with_missing_values_last(board):
    table = table_for()
    assert table.sort == "-fast_1"
    assert names(table) == [
        "Alpha-14B",
        "Flagged-Method",
        "Beta-8B",
        "Verified-Method",
        "Compiled-Method",
        "Delta Compare",
        "Gamma Agent",
        "Hacked-Method",
    ]
    assert [row.rank for row in table.all_rows] == [1, 2, 3, 4, None, None, None, None]


def test_ascending_sort_keeps_missing_values_last(board):
    table = table_for("sort=fast_1")
    assert names(table)[:4] == ["Verified-Method", "Beta-8B", "Flagged-Method", "Alpha-14B"]
    assert all(row.value_of("fast_1") is None for row in table.all_rows[4:])


def test_any_column_sorts_both_ways(board):
    by_fast2 = names(table_for("sort=-fast_2"))
    assert by_fast2[:3] == ["Verified-Method", "Beta-8B", "Alpha-14B"]  # 10.0 verified, 7.9, 6.2
    assert names(table_for("sort=name")) == sorted(names(table_for("sort=name")), key=str.casefold)
    assert names(table_for("sort=-name")) == sorted(
        names(table_for("sort=name")), key=str.casefold, reverse=True
    )
    dated = table_for("sort=-date")
    dates = [row.date for row in dated.all_rows if row.date]
    assert dates == sorted(dates, reverse=True)


def test_hidden_scores_never_show_and_hacked_ones_never_rank(board):
    table = table_for()
    assert "Hidden-Method" not in names(table)
    hacked = next(row for row in table.all_rows if row.name == "Hacked-Method")
    cell = hacked.cells["fast_1"]
    assert cell.value is None
    assert cell.hacked
    assert hacked.rank is None


def test_flagged_scores_rank_with_a_mark(board):
    flagged = next(row for row in table_for().all_rows if row.name == "Flagged-Method")
    assert flagged.rank == 2
    assert flagged.cells["fast_1"].flagged
    assert "suspicious timing" in cell_title(flagged.cells["fast_1"])


def test_verified_value_ranks_and_the_reported_one_shows_with_the_difference(board):
    row = next(row for row in table_for().all_rows if row.name == "Verified-Method")
    cell = row.cells["fast_1"]
    assert cell.provenance == "verified"
    assert cell.value == pytest.approx(30.0)  # 3 of 10 tasks correct and faster than 1x
    assert cell.reported_value == 50.0
    assert cell.difference == pytest.approx(-20.0)
    assert cell.link == f"/runs/{board.run.pk}/"


def test_reported_cells_carry_their_source(board):
    row = table_for().all_rows[0]
    cell = row.cells["fast_1"]
    assert cell.provenance == "reported"
    assert cell.link == "https://arxiv.org/abs/2602.05885"
    assert "Dr. Kernel paper" in cell_title(cell)
    assert "Table 1" in cell_title(cell)
    assert "as written: 70.6" in cell_title(cell)
    assert cell.threshold_op == ">="


def test_geomean_view_sorts_by_geomean_and_tags_mean_types(board):
    table = table_for("view=geomean")
    assert table.sort == "-speedup_geomean"
    assert names(table)[:2] == ["Gamma Agent", "Verified-Method"]  # 2.214 reported, then the verified geomean
    delta = next(row for row in table.all_rows if row.name == "Delta Compare")
    assert delta.cells["speedup_mean"].aggregation_tag == "G"
    gamma = next(row for row in table.all_rows if row.name == "Gamma Agent")
    assert gamma.cells["speedup_mean"].aggregation_tag == "A"
    assert [row.name for row in table.all_rows if row.name in {"Alpha-14B", "Beta-8B"}] == []


def test_fastp_view_computes_verified_rows_for_any_p(board):
    table = table_for("view=fastp&p=1.35")
    verified = next(row for row in table.all_rows if row.name == "Verified-Method")
    outcomes = [scoring.TaskOutcome(correct, eager) for correct, eager, _ in factories.FIVE_FAST]
    assert verified.fast_p.value == pytest.approx(scoring.fast_p(outcomes, 1.35, 10)) == pytest.approx(20.0)
    assert verified.fast_p.computed_p == 1.35
    alpha = next(row for row in table.all_rows if row.name == "Alpha-14B")
    assert alpha.fast_p.value is None  # no source reports p = 1.35
    assert names(table)[0] == "Verified-Method"


def test_fastp_view_shows_reported_values_at_reported_p(board):
    table = table_for("view=fastp&p=2")
    values = {row.name: row.fast_p.value for row in table.all_rows}
    assert values["Alpha-14B"] == 6.2
    assert values["Beta-8B"] == 7.9
    assert values["Verified-Method"] == pytest.approx(10.0)
    assert table_for("view=fastp&p=0").all_rows[0].fast_p.value is not None  # fast_0 = correct rate


def test_computed_fast_p_at_one_equals_the_stored_verified_fast1(board):
    table = table_for("view=fastp&p=1")
    row = next(row for row in table.all_rows if row.name == "Verified-Method")
    assert row.fast_p.value == pytest.approx(row.cells["fast_1"].verified_value)


def test_only_sample_zero_counts_and_hack_flags_count_as_incorrect(board):
    from leaderboard.models import TaskResult

    best = TaskResult.objects.get(run=board.run, kernel__sample=0, speedup_eager=2.5)
    best.flags = [{"code": "reads_reference", "severity": "hack", "detail": "x"}]
    best.save()
    row = next(row for row in table_for("view=fastp&p=2").all_rows if row.name == "Verified-Method")
    assert row.fast_p.value == 0.0  # the only task above 2x is a hack; sample-1 kernels at 50x never count


def test_the_newest_verified_run_is_shown(board):
    factories.verified_run(board.verified, [(True, 3.0, 3.0)] * 5, gpu="H100", n_tasks=10)
    row = next(row for row in table_for().all_rows if row.name == "Verified-Method")
    assert row.cells["fast_1"].value == pytest.approx(50.0)
    assert row.verified_run > board.run.pk


def test_provenance_filter(board):
    assert names(table_for("provenance=verified")) == ["Verified-Method"]
    reported_only = table_for("provenance=reported")
    row = next(row for row in reported_only.all_rows if row.name == "Verified-Method")
    assert row.cells["fast_1"].value == 50.0
    assert row.cells["fast_1"].provenance == "reported"


def test_baseline_filter_picks_compile_scores(board):
    table = table_for("baseline=compile&sort=-fast_1")
    assert set(names(table)) == {"Verified-Method", "Compiled-Method"}
    verified = next(row for row in table.all_rows if row.name == "Verified-Method")
    assert verified.cells["fast_1"].value == pytest.approx(10.0)  # only 1.2x beats compile
    assert verified.baseline == "compile"


def test_default_baseline_keeps_reported_compile_rows_with_their_baseline(board):
    row = next(row for row in table_for().all_rows if row.name == "Compiled-Method")
    assert row.cells["speedup_median"].baseline_tag == "compile"
    assert row.baseline == "compile"


def test_hardware_kind_date_and_text_filters(board):
    assert set(names(table_for("hardware=L40S"))) == {"Gamma Agent"}
    assert "Verified-Method" in names(table_for("hardware=H100"))
    assert names(table_for("kind=agent")) == ["Gamma Agent"]
    assert set(names(table_for("from=2026-06&to=2026-06"))) == {
        "Alpha-14B",
        "Compiled-Method",
        "Delta Compare",
        "Hacked-Method",
    }
    assert names(table_for("q=qwen3-14b")) == ["Alpha-14B"]
    assert names(table_for("q=beta")) == ["Beta-8B"]


def test_pages_slice_the_ordered_rows(board):
    table = table_for("per_page=3&page=2")
    assert table.count == 8
    assert table.pages == 3
    assert table.page == 2
    assert [row.name for row in table.rows] == names(table_for())[3:6]
    assert table_for("per_page=3&page=99").page == 3


def test_columns_are_the_level_s_and_sort_links_toggle(board):
    table = table_for()
    keys = [column.key for column in table.columns]
    assert keys[:3] == ["name", "hardware", "date"]
    assert "success_rate" not in keys  # no entry of the level has it
    fast_1 = next(column for column in table.columns if column.key == "fast_1")
    assert fast_1.sorted == "desc"
    assert "sort=fast_1" in fast_1.sort_url
    slower = next(c for c in table_for("view=geomean").columns if c.key == "pct_slower")
    assert "sort=pct_slower" in slower.sort_url  # lower is better: first click sorts ascending


def test_level_without_data_defaults_to_name_order(db):
    table = table_for(level=1)
    assert table.sort_key == "name"
    assert table.count == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("view=table", "view='table' is not one of"),
        ("sort=-bogus", "sort='-bogus'"),
        ("view=geomean&sort=fast_2", "sort='fast_2'"),
        ("p=abc", "p='abc' is not a number"),
        ("p=3.5", "must be between 0 and 3"),
        ("p=nan", "must be between 0 and 3"),
        ("baseline=jit", "baseline='jit'"),
        ("provenance=rumour", "provenance='rumour'"),
        ("kind=wizard", "kind='wizard'"),
        ("from=June", "not a month"),
        ("from=2026-13", "the month must be 01 to 12"),
        ("from=2026-07&to=2026-06", "from must not be after to"),
        ("page=0", "page='0'"),
        ("compare=x", "compare='x'"),
    ],
)
def test_bad_parameters_get_a_clear_error(text, message):
    with pytest.raises(BadQuery, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_query(QueryDict(text))


def test_query_round_trips_through_its_url():
    query = parse_query(
        QueryDict("view=fastp&sort=-fast_p&p=1.35&hardware=H100&baseline=compile&from=2026-01")
    )
    assert parse_query(QueryDict(query.urlencode()[1:])) == query
    assert query.date_from == datetime.date(2026, 1, 1)
    assert TableQuery().urlencode() == ""
    assert parse_query(QueryDict("p=1.33")).p == 1.35  # snapped to the 0.05 step
