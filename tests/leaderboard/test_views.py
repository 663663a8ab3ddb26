"""The HTML pages on PostgreSQL: level tables (order, filters, p, provenance), the pinned query count, and
the home, method, entry and task pages."""

import json

import pytest
from django.urls import reverse

from leaderboard.models import Entry
from tests.leaderboard import factories
from tests.leaderboard.test_views_support import page_headers, page_rows

LEVEL_PAGE_QUERIES = 7
"""The page cache's data version (serving/page_cache.py), then the table's: level, metric catalogue,
entries, the sort column's scores, the page's scores, per-task results."""


@pytest.fixture
def board(db):
    return factories.make_board()


def get_rows(client, url):
    response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    return page_rows(response.content.decode())


def row_names(rows) -> list[str]:
    names = dict(Entry.objects.filter(pk__in=[r.entry_id for r in rows]).values_list("pk", "label"))
    methods = dict(Entry.objects.filter(pk__in=[r.entry_id for r in rows]).values_list("pk", "method__name"))
    return [names[r.entry_id] or methods[r.entry_id] for r in rows]


def test_level_page_lists_rows_in_fast1_order(client, board):
    rows = get_rows(client, "/levels/2/")
    assert row_names(rows)[:4] == ["Alpha-14B", "Flagged-Method", "Beta-8B", "Verified-Method"]
    assert [row.rank for row in rows][:5] == ["1", "2", "3", "4", "—"]
    assert rows[0].cells["fast_1"].value == "70.6"


def test_sorting_works_through_the_url_both_ways_with_missing_last(client, board):
    down = get_rows(client, "/levels/2/?sort=-fast_2")
    assert row_names(down)[:3] == ["Verified-Method", "Beta-8B", "Alpha-14B"]
    up = get_rows(client, "/levels/2/?sort=fast_2")
    values = [row.cells["fast_2"].value for row in up]
    present = [float(v) for v in values if v]
    assert present == sorted(present)
    assert values[len(present) :] == [""] * (len(values) - len(present))


def test_header_links_keep_the_view_filters_and_toggle_the_direction(client, board):
    html = client.get("/levels/2/?view=fastp&p=1.5&hardware=H100&sort=-fast_p").content.decode()
    assert 'href="?view=fastp&amp;sort=fast_p&amp;p=1.5&amp;hardware=H100"' in html
    assert 'href="?view=fastp&amp;sort=-fast_2&amp;p=1.5&amp;hardware=H100"' in html


def test_filters_apply_from_the_url(client, board):
    assert row_names(get_rows(client, "/levels/2/?provenance=verified")) == ["Verified-Method"]
    assert row_names(get_rows(client, "/levels/2/?kind=agent")) == ["Gamma Agent"]
    assert row_names(get_rows(client, "/levels/2/?q=Qwen3-14B")) == ["Alpha-14B"]
    assert set(row_names(get_rows(client, "/levels/2/?hardware=L40S"))) == {"Gamma Agent"}
    html = client.get("/levels/2/?hardware=L40S").content.decode()
    assert '<option value="L40S" selected>L40S</option>' in html


def test_p_control_changes_the_fast_p_column(client, board):
    html = client.get("/levels/2/?view=fastp&p=1.35").content.decode()
    assert 'name="p" min="0" max="3.0" step="0.05" value="1.35"' in html
    assert "fast_1.35" in html
    rows = page_rows(html)
    assert row_names(rows)[0] == "Verified-Method"
    assert float(rows[0].cells["fast_p"].value) == pytest.approx(20.0)
    alpha = dict(zip(row_names(rows), rows, strict=True))["Alpha-14B"].cells["fast_p"]
    assert alpha.value == ""
    assert alpha.text == "not reported"
    assert alpha.title == "No source reports fast_p at p = 1.35"
    at_two = page_rows(client.get("/levels/2/?view=fastp&p=2").content.decode())
    by_name = dict(zip(row_names(at_two), at_two, strict=True))
    assert by_name["Beta-8B"].cells["fast_p"].value == "7.9"


def test_hidden_never_shows_hacked_never_ranks_flagged_is_marked(client, board):
    rows = get_rows(client, "/levels/2/")
    by_name = dict(zip(row_names(rows), rows, strict=True))
    assert "Hidden-Method" not in by_name
    hacked = by_name["Hacked-Method"].cells["fast_1"]
    assert hacked.value == ""
    assert "hacked" in hacked.text
    assert by_name["Hacked-Method"].rank == "—"
    flagged = by_name["Flagged-Method"].cells["fast_1"]
    assert "is-flagged" in flagged.classes
    assert "suspicious timing" in flagged.title


def test_cells_show_their_provenance(client, board):
    rows = get_rows(client, "/levels/2/")
    by_name = dict(zip(row_names(rows), rows, strict=True))
    reported = by_name["Alpha-14B"].cells["fast_1"]
    assert reported.links == ["https://arxiv.org/abs/2602.05885"]
    assert "Reported: Dr. Kernel paper · arXiv 2602.05885 · Table 1 (as written: 70.6)" in reported.title
    verified = by_name["Verified-Method"].cells["fast_1"]
    assert "is-verified" in verified.classes
    assert verified.links == [f"/runs/{board.run.pk}/"]
    assert "rep 50" in verified.text
    assert "−20" in verified.text
    assert "Verified: evaluation run" in verified.title


def test_geomean_view_shows_mean_types_hardware_tasks_and_baseline(client, board):
    html = client.get("/levels/2/?view=geomean").content.decode()
    headers = page_headers(html)
    assert headers[:4] == ["name", "hardware", "n_tasks", "baseline"]
    assert headers[4] == "speedup_geomean"
    rows = page_rows(html)
    by_name = dict(zip(row_names(rows), rows, strict=True))
    assert "tag-agg-G" in html
    assert by_name["Delta Compare"].cells["speedup_mean"].text.startswith("G")
    assert by_name["Gamma Agent"].cells["speedup_mean"].text.startswith("A")


def test_bad_parameters_answer_400_with_the_reason(client, board):
    response = client.get("/levels/2/?sort=-everything")
    assert response.status_code == 400
    assert "sort=&#x27;-everything&#x27;" in response.content.decode()
    assert client.get("/levels/2/?p=7").status_code == 400
    assert client.get("/levels/9/").status_code == 404


def test_level_page_query_count_is_pinned(client, board, django_assert_num_queries):
    for url in ("/levels/2/", "/levels/2/?view=fastp&p=1.35", "/levels/2/?view=geomean&hardware=H100"):
        with django_assert_num_queries(LEVEL_PAGE_QUERIES):
            assert client.get(url).status_code == 200


def test_query_count_does_not_grow_with_entries(client, board, django_assert_num_queries):
    for index in range(30):
        extra = factories.entry(f"Extra {index}")
        factories.reported(extra, "fast_1", float(index))
    factories.verified_run(factories.entry("Second verified"), factories.FIVE_FAST, n_tasks=10)
    with django_assert_num_queries(LEVEL_PAGE_QUERIES):
        assert client.get("/levels/2/?per_page=100").status_code == 200


def test_pages_are_linked_and_keep_the_query(client, board):
    html = client.get("/levels/2/?per_page=3&sort=-fast_1").content.decode()
    assert 'href="?sort=-fast_1&amp;page=2&amp;per_page=3"' in html
    rows = get_rows(client, "/levels/2/?per_page=3&page=2")
    assert len(rows) == 3


def test_the_page_reads_without_javascript(client, board):
    html = client.get("/levels/2/").content.decode()
    assert '<form id="filters"' in html
    assert '<button type="submit">Apply</button>' in html
    assert 'id="chart-data" type="application/json"' in html
    assert "/static/vendor/chart.js/chart.umd.min.js" in html


def test_home_page_shows_levels_top_entries_and_latest_runs(client, board):
    html = client.get("/").content.decode()
    assert "Level 2" in html
    assert "Alpha-14B" in html
    assert f"/runs/{board.run.pk}/" in html
    assert "Latest verified runs" in html


def test_method_page_lists_entries_and_scores(client, board):
    slug = board.verified.method.slug
    html = client.get(reverse("leaderboard:method", args=[slug])).content.decode()
    assert "Verified-Method" in html
    assert f"/runs/{board.run.pk}/" in html
    assert "✓ verified" in html
    assert client.get("/methods/no-such-method/").status_code == 404


def test_entry_page_shows_every_metric_with_conventions_and_runs(client, board):
    html = client.get(f"/entries/{board.verified.pk}/").content.decode()
    assert "Fast1" in html
    assert "Dr. Kernel paper" in html
    assert "verified − reported" in html
    assert f"run #{board.run.pk}" in html
    assert "torch.compile" in html  # the compile-baseline verified scores are listed too
    hacked = client.get(f"/entries/{board.hacked.pk}/").content.decode()
    assert "reads the reference output" in hacked
    hidden = client.get(f"/entries/{board.hidden.pk}/").content.decode()
    assert "98" not in hidden.split("<h2>Scores</h2>")[1]


def test_task_page_shows_escaped_code_baselines_and_best_kernels(client, board):
    task = factories.tasks(2, 1)[0]
    task.source = "class Model:  # <script>alert(1)</script>\n    pass\n"
    task.save()
    html = client.get(task.get_absolute_url()).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html
    assert "H100" in html
    assert "2.000" in html  # the eager baseline median in ms
    assert "1.500" in html  # the torch.compile baseline
    assert "Verified-Method" in html  # its sample-0 kernel on task 1 is correct at 1.5x
    assert client.get("/tasks/").status_code == 200


def chart_data(html: str) -> dict:
    opening = '<script id="chart-data" type="application/json">'
    start = html.index(opening) + len(opening)
    return json.loads(html[start : html.index("</script>", start)])


def test_the_over_time_chart_has_each_months_best_and_the_running_best(client, board):
    timeline = chart_data(client.get("/levels/2/").content.decode())["timeline"]
    assert timeline["months"] == sorted(timeline["months"])
    by_month = {}
    for point in timeline["points"]:
        by_month.setdefault(point["x"], []).append(point["y"])
    assert all(values == sorted(values, reverse=True) for values in by_month.values())
    best = {point["x"]: (point["y"], point["label"]) for point in timeline["best"]}
    assert by_month["2026-05"] == [44.8]  # Beta-8B, the month's only entry with a Fast1 ...
    assert best["2026-05"] == (60.0, "Flagged-Method")  # ... under the best so far (March)
    assert best["2026-06"] == (70.6, "Alpha-14B")
    assert best[timeline["months"][-1]] == (70.6, "Alpha-14B")  # a later, lower month keeps the best
    running = [point["y"] for point in timeline["best"]]
    assert running == sorted(running)
