"""HTML pages: home, per-level leaderboards, method, entry and task pages (read-only)."""

from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import mark_safe

from leaderboard import scoring
from leaderboard import table as tables
from leaderboard.models import Aggregation, Baseline, Lane, Level, MethodKind, Provenance
from leaderboard.views import details, entry_page
from leaderboard.views.cells import cell_html, cells_html, rows_html
from leaderboard.views.charts import chart_data
from leaderboard.views.params import BadQuery, parse_query
from tasks.models import Task

HOME_TOP = 3
"""Top rows shown per level on the home page."""

LANE_CHOICES = [
    (Lane.SEPARATE, "separate lane: other suites, CPU runs"),
    (tables.ALL_LANES, "both lanes, ranked together"),
]
"""The lane filter's options besides the default, the ranking lane."""


def bad_request(request, error: BadQuery):
    return render(request, "leaderboard/bad_request.html", {"message": str(error)}, status=400)


def build_or_404(number: int, query: tables.TableQuery, paginate: bool = True) -> tables.Table:
    try:
        return tables.build_table(number, query, paginate=paginate)
    except Level.DoesNotExist as missing:
        raise Http404(str(missing)) from None


def home(request):
    levels = []
    for level in Level.objects.select_related("benchmark"):
        table = build_or_404(level.number, tables.TableQuery(per_page=HOME_TOP))
        top = [{"row": row, "score": main_cell_html(row, table.sort_key)} for row in table.rows]
        levels.append({"level": level, "table": table, "top": top})
    context = {"levels": levels, "runs": details.latest_verified_runs()}
    return render(request, "leaderboard/home.html", context)


def main_cell_html(row: tables.Row, key: str) -> str:
    """The <td> of a row's value in the column its table is sorted by (a dash when it has none)."""
    cell = next((c for c in row.line if c.metric.id == key), None)
    if cell is not None:
        return mark_safe(cell_html(cell))  # cell_html escapes every text
    return mark_safe('<td class="num"><span class="dash">—</span></td>')


def pager(table: tables.Table, window: int = 2) -> list[tuple[int | None, str, bool]]:
    """Page links: the first, the last and a window around the current page, with gaps as None."""
    if table.pages <= 1:
        return []
    wanted = {1, table.pages, *range(table.page - window, table.page + window + 1)}
    numbers = sorted(n for n in wanted if 1 <= n <= table.pages)
    links, previous = [], 0
    for number in numbers:
        if number > previous + 1:
            links.append((None, "", False))
        links.append((number, table.page_url(number) or "?", number == table.page))
        previous = number
    return links


THRESHOLD_SIGNS = {scoring.ThresholdOp.GT: ">", scoring.ThresholdOp.GE: "≥"}


def header_title(column: tables.Column, rows: list[tables.Row]) -> str:
    """A column header's tooltip: what the column means and, for fast_p, whether its values on this page
    count speedup > p or ≥ p (verified ones always >; a reported one as its source does)."""
    if not column.is_metric:
        return ""
    metric = column.metric
    text = metric.description
    if metric.threshold is None:
        return text
    p = f"{metric.threshold:g}"
    ops = {
        cell.threshold_op
        for row in rows
        for cell in row.line
        if cell.metric.id == column.key and cell.value is not None
    }
    signs = [THRESHOLD_SIGNS[op] for op in (scoring.ThresholdOp.GT, scoring.ThresholdOp.GE) if op in ops]
    counted = " or ".join(f"speedup {sign} {p}" for sign in signs) or f"speedup > {p}"
    mixed = " (each value says which)" if len(signs) > 1 else ""
    return f"{metric.name}: share of tasks correct with {counted}{mixed}. Glossary: fast_p, > or ≥."


def glossary_anchor(column: tables.Column) -> str:
    if column.key == tables.FAST_P_KEY:
        return "fast_p"
    return f"metric-{column.key}" if column.is_metric else ""


def level_context(table: tables.Table) -> dict:
    query = table.query
    charts = chart_data(table)
    rows_html(table.rows, set(charts["selected"]))
    return {
        "table": table,
        "query": query,
        "nav_level": table.level.number,
        "level_subtitle": table.level.name.split(":", 1)[-1].strip(),
        "tabs": [
            (view, query.urlencode(view=slug, sort="", page=1), slug == query.view)
            for slug, view in tables.VIEWS.items()
        ],
        "kinds": MethodKind.choices,
        "baselines": [(Baseline.EAGER, Baseline.EAGER.label), (Baseline.COMPILE, Baseline.COMPILE.label)],
        "provenances": Provenance.choices,
        "lanes": LANE_CHOICES,
        "charts": charts,
        "headers": [
            (column, header_title(column, table.rows), glossary_anchor(column)) for column in table.columns
        ],
        "pager": pager(table),
        "p_max": scoring.FAST_P_MAX,
        "p_step": scoring.FAST_P_STEP,
        "default_per_page": tables.DEFAULT_PER_PAGE,
        "export_url": query.urlencode(page=1),
        "reset_url": tables.TableQuery(view=query.view, p=query.p, sort=query.sort).urlencode(),
    }


def level(request, number):
    try:
        query = parse_query(request.GET)
    except BadQuery as error:
        return bad_request(request, error)
    context = build_or_404(number, query).derive("page", level_context)
    return render(request, "leaderboard/level.html", context)


def method(request, slug):
    found = details.method_detail(slug)
    if found is None:
        raise Http404("No such method.")
    for group in found["levels"]:
        for row in group["rows"]:
            row["cells_html"] = cells_html(row["cells"])
            entry = row["entry"]
            row["facts"] = [text for text in (entry.mode, entry.data_source, entry.task_subset) if text]
    return render(request, "leaderboard/method.html", found)


def entry(request, pk):
    found = details.entry_detail(pk)
    if found is None:
        raise Http404("No such entry.")
    entry = found["entry"]
    for group in found["metric_groups"]:
        group["title"] = metric_title(group["metric"], group["scores"])
    found["facts"] = entry_page.entry_facts(entry)
    found["measured"] = entry_page.measurements(found["metric_groups"], entry)
    found["paper_url"] = next((link for label, _, link in found["facts"] if label == "Paper"), "")
    return render(request, "leaderboard/entry.html", found)


def metric_title(metric, scores) -> str:
    """A metric's name on the entry page; the 'mean speedup' of sources that give a geometric mean is
    called what it is."""
    if metric.id == "speedup_mean" and scores and all(s.aggregation == Aggregation.GEOMETRIC for s in scores):
        return "Geomean speedup (the source's mean column)"
    return metric.name


def task(request, suite, level, problem_id):
    found = get_object_or_404(
        Task.objects.current(suite).select_related("level__benchmark"),
        level__number=level,
        problem_id=problem_id,
    )
    return render(request, "leaderboard/task.html", details.task_detail(found))


def task_index(request):
    return render(request, "leaderboard/tasks.html", {"groups": details.task_groups()})
