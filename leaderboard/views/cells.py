"""Table cells as HTML, written in Python: a page holds hundreds of cells, and the template engine
would spend most of the page's time on them. Every text is escaped here; the result is marked safe."""

from html import escape

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from leaderboard.models import Provenance
from leaderboard.scoring import separate_lane_reasons
from leaderboard.table import FAST_P_KEY, Candidate, Cell, Row
from leaderboard.views.text import cell_title, difference_text, format_value, reported_text, value_text

DASH = '<span class="dash">—</span>'
VERIFIED_BADGE = (
    ' <span class="badge badge-verified" title="Has scores measured by this site&#x27;s harness">'
    "✓ verified</span>"
)
CPU_VERIFIED_BADGE = (
    ' <span class="badge badge-verified badge-cpu" title="CPU timing, not a GPU verification">'
    "✓ verified · CPU</span>"
)
LANE_BADGE = (
    ' <span class="badge badge-lane" title="Separate lane: {why}; it never ranks among full-suite results '
    'unless the lane filter asks for all">{suite} · separate lane</span>'
)
REPORTED_MARK = '<span class="prov-mark" aria-label="reported">R</span>'
"""The visible mark of a reported value (a verified one carries ✓)."""
REPRO_BADGE = ' <span class="badge" title="A third party&#x27;s reproduction">repro</span>'

BASELINE_TITLES = {
    "compile": "Speedup against torch.compile, not PyTorch eager",
    "naive CUDA": "Speedup against naive CUDA kernels",
    "?": "The source does not state the baseline",
}
CI_TITLES = {
    "wilson": "95% Wilson interval over the level's tasks",
    "bootstrap": "95% bootstrap interval over tasks (2000 resamples, fixed seed)",
}
TIE_MARK = (
    '<abbr class="tie" title="Not separable at 95% from the row above: their intervals overlap">≈</abbr>'
)
AGGREGATION_TITLES = {"A": "Arithmetic mean", "G": "Geometric mean", "?": "Mean type not stated"}


def value_html(cell: Cell) -> str:
    """The value with its marks: flag, baseline, mean type, the link to its run or source, the badge."""
    parts = []
    if cell.flagged:
        parts.append('<span class="flag" aria-label="flagged">⚑</span>')
    if cell.baseline_tag:
        title = BASELINE_TITLES.get(cell.baseline_tag, "")
        parts.append(f'<span class="tag tag-baseline" title="{title}">{escape(cell.baseline_tag)}</span>')
    tag = cell.aggregation_tag
    if tag:
        title = AGGREGATION_TITLES[tag]
        parts.append(f'<span class="tag tag-agg tag-agg-{tag}" title="{title}">{tag}</span>')
    text = escape(value_text(cell))
    link = cell.link
    if link and cell.provenance == Provenance.REPORTED:
        parts.append(f'<a class="v" href="{escape(link)}" rel="noopener" target="_blank">{text}</a>')
    elif link:
        parts.append(f'<a class="v" href="{escape(link)}">{text}</a>')
    else:
        parts.append(f'<span class="v">{text}</span>')
    if cell.provenance == Provenance.VERIFIED:
        parts.append('<span class="badge-v" aria-label="verified">✓</span>')
    elif cell.provenance == Provenance.REPORTED:
        parts.append(REPORTED_MARK)
    interval = cell.ci
    if interval is not None:
        low, high = (format_value(bound, cell.metric.unit) for bound in (interval.low, interval.high))
        title = CI_TITLES.get(interval.method, "")
        parts.append(f'<span class="ci" title="{title}">[{escape(low)}–{escape(high)}]</span>')
    if cell.difference is not None:
        parts.append(
            f'<span class="rep">rep {escape(reported_text(cell))} '
            f'<span class="diff">{escape(difference_text(cell))}</span></span>'
        )
    return "".join(parts)


def cell_html(cell: Cell) -> str:
    """One <td>: right-aligned value with provenance, or a muted dash, or a 'hacked' mark."""
    classes = ["num"]
    if cell.value is None:
        classes.append("is-missing")
    elif cell.provenance == Provenance.VERIFIED:
        classes.append("is-verified")
    if cell.flagged:
        classes.append("is-flagged")
    opening = f'<td class="{" ".join(classes)}" data-key="{escape(cell.metric.id)}" data-value="{cell.raw}"'
    if cell.value is None and not cell.hacked:
        if cell.metric.id == FAST_P_KEY:
            p = f"{cell.metric.threshold:g}"
            return (
                opening
                + f' title="No source reports fast_p at p = {p}"><span class="nr">not reported</span></td>'
            )
        return opening + ">" + DASH + "</td>"
    title = f' title="{escape(cell_title(cell))}"'
    source = cell.reported.source_link if cell.reported is not None else ""
    if source:
        title += f' data-source="{escape(source)}"'
    if cell.value is None:
        return opening + title + '><span class="tag tag-hacked">hacked</span></td>'
    return opening + title + ">" + value_html(cell) + "</td>"


def cells_html(cells: list[Cell]) -> SafeString:
    return mark_safe("".join(cell_html(cell) for cell in cells))  # every text is escaped above


URL_ARGUMENT = "987654321"


def url_template(name: str) -> str:
    """A URL with '{}' where its one argument goes: reverse() once per page, not once per row."""
    return reverse(name, args=[URL_ARGUMENT]).replace(URL_ARGUMENT, "{}")


def lane_badge(score: Candidate) -> str:
    """The mark of a row from the separate lane, saying why it is there."""
    why = "; ".join(separate_lane_reasons(score.suite, score.run_device))
    suite = f"{score.suite} suite" if score.suite else "other suite"
    return LANE_BADGE.format(why=escape(why), suite=escape(suite))


def name_html(row: Row, entry_url: str, method_url: str) -> str:
    """The name cell: the entry's link, its badges and a line of method facts."""
    badges = ""
    if row.is_verified:
        badges = CPU_VERIFIED_BADGE if row.cpu_only else VERIFIED_BADGE
    separate = row.separate_lane
    if separate is not None:
        badges += lane_badge(separate)
    if row.reproduce:
        badges += REPRO_BADGE
    facts = [verified_scope(row)] if row.is_verified else []
    if row.label and row.label != row.method_name:
        facts.append(f'<a href="{method_url.format(escape(row.method_slug))}">{escape(row.method_name)}</a>')
    facts += [escape(text) for text in (row.kind_label, row.backbone, row.task_subset) if text]
    if row.paired_entry is not None:
        facts.append(
            f'<a class="paired" href="{entry_url.format(row.paired_entry)}" '
            'title="The reported entry of this method and level its values are compared with">'
            "paired with reported</a>"
        )
    facts = [fact for fact in facts if fact]
    link = f'<a class="entry-link" href="{entry_url.format(row.entry_id)}">{escape(row.name)}</a>'
    return f'<td class="col-name">{link}{badges}<div class="sub">{" · ".join(facts)}</div></td>'


def verified_scope(row: Row) -> str:
    """What a verified row's values are over, as its metadata line says it first: suite, task count and
    CPU timing (a separate-lane run must not read like a full-level GPU result)."""
    verified = next((c.verified for c in row.cells.values() if c.verified is not None), None)
    if verified is None:
        return ""
    parts = [f"{verified.suite} suite" if verified.suite else ""]
    n_tasks = row.verified_n_tasks or verified.n_tasks
    parts.append(f"{n_tasks} tasks" if n_tasks else "")
    parts.append("CPU timing" if verified.run_device == "cpu" else verified.run_hardware)
    text = ", ".join(escape(part) for part in parts if part)
    return f'<span class="scope" data-testid="verified-scope">verified: {text}</span>' if text else ""


def rows_html(rows: list[Row], selected: set[int]) -> None:
    """Give every row its HTML."""
    entry_url, method_url = url_template("leaderboard:entry"), url_template("leaderboard:method")
    for row in rows:
        row.html = row_html(row, selected, entry_url, method_url)


def row_html(row: Row, selected: set[int], entry_url: str, method_url: str) -> SafeString:
    """One <tr> of the leaderboard: rank, the chart pick, name, info columns and the value cells."""
    rank = (str(row.rank) + (TIE_MARK if row.tied else "")) if row.rank else DASH
    checked = " checked" if row.entry_id in selected else ""
    pick = (
        f'<td class="col-compare"><input type="checkbox" name="compare" value="{row.entry_id}" '
        f'form="compare-entries" aria-label="Draw {escape(row.name)} in the fast_p chart"{checked}></td>'
    )
    info = "".join(
        f'<td class="text col-{key}">{escape(text) if text else DASH}</td>' for key, text in row.info
    )
    classes = ' class="row-verified"' if row.is_verified else ""
    name = name_html(row, entry_url, method_url)
    values = "".join(cell_html(cell) for cell in row.line)
    opening = f'<tr data-entry-id="{row.entry_id}"{classes}><td class="col-rank">{rank}</td>'
    return mark_safe(f"{opening}{pick}{name}{info}{values}</tr>")  # every text is escaped above
