"""An entry page besides its scores: its facts without repeats, and how each number was measured."""

from leaderboard import scoring
from leaderboard.models import Aggregation, Baseline, Entry, Provenance, Score
from leaderboard.table import AGGREGATION_LABELS, BASELINE_LABELS, DENOMINATOR_LABELS

THRESHOLD_WORDS = {">": "speedup > p (strict, KernelBench)", ">=": "speedup ≥ p"}


def entry_facts(entry: Entry) -> list[tuple[str, str, str]]:
    """(label, text, link) of the entry's facts, each shown once: a metadata key whose value another fact
    already shows (the importer derives hardware, settings and protocol from them) is left out."""
    method = entry.method
    facts = [
        ("Backbone", method.backbone, ""),
        ("Models it calls", method.agent_models, ""),
        ("Hardware", entry.hardware.name if entry.hardware else "not stated", ""),
        ("Baseline", entry.get_baseline_display(), ""),
        ("Date", entry.date_label or "—", ""),
        ("Tasks", task_text(entry), ""),
        ("Protocol", entry.mode, ""),
        ("Data source", entry.data_source, ""),
        ("Reproduction", "A third party's reproduction of the method" if entry.reproduce else "", ""),
        ("Settings", "; ".join(entry.hyperparameters or []), ""),
        ("Paper", paper_link(method), "url"),
        ("Code", method.code_url, "url"),
    ]
    shown = [(label, text, text if kind == "url" else "") for label, text, kind in facts if text]
    seen = {normalised(text) for _, text, _ in shown}
    seen.add("true")  # reproduce=true
    for key, value in (entry.metadata or {}).items():
        text = str(value)
        if normalised(text) not in seen:
            shown.append((key, text, ""))
            seen.add(normalised(text))
    return shown


def task_text(entry: Entry) -> str:
    return " ".join(filter(None, [entry.task_subset, f"({entry.n_tasks})" if entry.n_tasks else ""]))


def paper_link(method) -> str:
    """The method's paper: its URL, or its arXiv page."""
    return method.paper_url or (f"https://arxiv.org/abs/{method.arxiv_id}" if method.arxiv_id else "")


def normalised(text: str) -> str:
    return " ".join(str(text).casefold().split())


def measurement(score: Score, entry: Entry) -> dict:
    """How one value was measured, in words: aggregation, threshold, denominator, baseline, tasks, hardware,
    harness, suite and lane (what its source does not state says so)."""
    verified = score.provenance == Provenance.VERIFIED
    if verified and score.run_id:
        hardware = score.run.hardware.name
    else:
        hardware = entry.hardware.name if entry.hardware else ""
    cpu = verified and score.run_id and score.run.device == "cpu"
    return {
        "score": score,
        "aggregation": AGGREGATION_LABELS.get(score.aggregation, "")
        if score.aggregation != Aggregation.UNSTATED
        else "not stated",
        "threshold": THRESHOLD_WORDS.get(score.threshold_op, "") if score.metric.is_fast_p else "",
        "denominator": DENOMINATOR_LABELS.get(score.denominator, "not stated"),
        "baseline": "not stated"
        if score.baseline == Baseline.UNSTATED
        else BASELINE_LABELS.get(score.baseline, score.baseline),
        "n_tasks": score.n_tasks or entry.n_tasks,
        "hardware": (hardware or "not stated") + (" (CPU timing, not a GPU verification)" if cpu else ""),
        "harness": score.harness_version if verified else "",
        "suite": score.suite if verified else "",
        "lane": score.lane if verified else "",
    }


def measurements(metric_groups: list[dict], entry: Entry) -> list[dict]:
    """One row per value that ranks (or would, but for curation): what the entry's numbers rest on."""
    rows = []
    for group in metric_groups:
        for score in group["scores"]:
            if scoring.is_rankable(score.state):
                rows.append(measurement(score, entry))
    return rows
