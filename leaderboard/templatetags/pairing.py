"""`{% paired_scores entry %}`: an entry page's pairing (verified beside reported, with the gap) and its
"compare with…" form, written in Python with every text escaped (the page's own template stays as it is)."""

from html import escape

from django import template
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from leaderboard import scoring
from leaderboard.models import Baseline, Entry, Pairing, Score

register = template.Library()


def side_by_side(verified: Entry, reported: Entry) -> list[tuple[str, float, float, float]]:
    """(metric name, verified value, reported value, gap) for each metric both entries have: the verified
    value of the newest run against PyTorch eager, the first stored rankable reported value."""
    shown = list(Score.objects.shown_verified().filter(entry=verified).select_related("metric"))
    newest = scoring.latest_verified_run(score.run_id for score in shown)
    verified_values = {s.metric_id: s for s in shown if s.run_id == newest}
    reported_values: dict[str, Score] = {}
    for score in Score.objects.reported().rankable().filter(entry=reported).order_by("pk"):
        reported_values.setdefault(score.metric_id, score)
    rows = []
    for metric_id, score in sorted(verified_values.items(), key=lambda item: item[1].metric.position):
        other = reported_values.get(metric_id)
        if other is not None and score.baseline == Baseline.EAGER:
            gap = scoring.difference(score.value, other.value)
            rows.append((score.metric.name, score.value, other.value, gap))
    return rows


def entry_link(entry: Entry) -> str:
    return f'<a href="{escape(entry.get_absolute_url())}">{escape(entry.display_name)}</a> (#{entry.pk})'


def pairing_html(pairing: Pairing) -> str:
    """The verified entry's pairing: whom with, how it was made, and the values side by side."""
    how = "paired by staff" if pairing.mode == Pairing.Mode.MANUAL else "paired automatically"
    if pairing.reported is None:
        return '<p class="muted">Unpaired by staff: no reported entry is compared with this one.</p>'
    lines = "".join(
        f'<tr><th class="text" scope="row">{escape(name)}</th><td class="num">{v:.4g}</td>'
        f'<td class="num">{r:.4g}</td><td class="num diff">{g:+.3g}</td></tr>'
        for name, v, r, g in side_by_side(pairing.verified, pairing.reported)
    )
    table = (
        '<table class="list paired-scores"><thead><tr><th class="text">Metric</th>'
        '<th class="num">Verified</th><th class="num">Reported</th><th class="num">Gap</th></tr></thead>'
        f"<tbody>{lines}</tbody></table>"
        if lines
        else ""
    )
    return f'<p>Reported entry: {entry_link(pairing.reported)} <span class="muted">({how})</span></p>{table}'


@register.simple_tag
def paired_scores(entry: Entry) -> SafeString:
    """The pairing section of an entry page and a form to compare it with other entries."""
    parts = []
    pairing = Pairing.objects.select_related("reported__method", "verified").filter(verified=entry).first()
    if pairing is not None:
        parts.append(pairing_html(pairing))
    others = Pairing.objects.filter(reported=entry).select_related("verified__method", "verified__level")
    verified_by = [entry_link(p.verified) for p in others]
    if verified_by:
        parts.append(f"<p>Verified by: {', '.join(verified_by)}</p>")
    partner = pairing.reported_id if pairing is not None and pairing.reported_id else None
    partner = partner or next((p.verified_id for p in others), None)
    prefill = f"{entry.pk},{partner}" if partner else f"{entry.pk},"
    parts.append(
        f'<form class="compare-with" method="get" action="{reverse("leaderboard:compare")}">'
        '<label>Compare with… <input name="entries" value="' + escape(prefill) + '" '
        'size="16" aria-describedby="compare-help"></label> <button type="submit">Compare</button> '
        '<span id="compare-help" class="muted">entry ids separated by commas</span></form>'
    )
    section = "".join(parts)
    return mark_safe(f'<section class="pairing" aria-label="Pairing and comparison">{section}</section>')
