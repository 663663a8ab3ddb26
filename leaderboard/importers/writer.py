"""Write parsed reported scores to the database idempotently: unchanged rows are never touched.

Re-importing the same file changes nothing (no saves, so no history records). A changed value is
updated in place and its history kept. Curation state (flagged, hacked, hidden) and admin-edited
method metadata are never overwritten: catalogue metadata only fills blank fields.
"""

import re
from collections import Counter
from dataclasses import dataclass, field

from django.db import transaction

from leaderboard.importers import almanac
from leaderboard.importers.catalogue import load_catalogue, method_defaults, method_name_of
from leaderboard.models import Baseline, Entry, Hardware, Level, Method, Metric, Provenance, Score, Source

ALMANAC_TABLE_NAME = "Evaluation results"
FAST_P_IDS = {"fast_1", "fast_1_2", "fast_1_5", "fast_2"}
STATS_TABLE_IDS = {
    "speedup_geomean",
    "speedup_median",
    "speedup_min",
    "speedup_max",
    "pct_faster",
    "pct_slower",
}
METRIC_TYPES = {"arithmean (a)": "arithmetic", "geomean (g)": "geometric"}
FIRST_NUMBER = re.compile(r"(\d+)")


@dataclass
class ImportReport:
    """Counts of rows created, updated and left unchanged, per model."""

    created: Counter = field(default_factory=Counter)
    updated: Counter = field(default_factory=Counter)
    unchanged: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        parts = [
            f"{label} {dict(counter)}"
            for label, counter in (
                ("created", self.created),
                ("updated", self.updated),
                ("unchanged", self.unchanged),
            )
            if counter
        ]
        return "; ".join(parts) or "nothing to import"

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated)


class Writer:
    """Upserts that count what they did and save only what differs."""

    def __init__(self):
        self.report = ImportReport()

    def upsert(self, model, lookup: dict, values: dict, on_create: dict | None = None):
        instance = model.objects.filter(**lookup).first()
        name = model.__name__
        if instance is None:
            self.report.created[name] += 1
            return model.objects.create(**lookup, **values, **(on_create or {}))
        changed = [key for key, value in values.items() if getattr(instance, key) != value]
        if not changed:
            self.report.unchanged[name] += 1
            return instance
        for key in changed:
            setattr(instance, key, values[key])
        instance.save()
        self.report.updated[name] += 1
        return instance

    def method(self, name: str) -> Method:
        """The method of this name (case-insensitive); catalogue metadata fills only blank fields."""
        defaults = method_defaults(name)
        method, created = Method.objects.get_or_create_by_name(name, **defaults)
        if created:
            self.report.created["Method"] += 1
            return method
        blanks = {
            key: value for key, value in defaults.items() if getattr(method, key) in ("", "unclassified")
        }
        blanks = {key: value for key, value in blanks.items() if getattr(method, key) != value}
        return self.upsert(Method, {"pk": method.pk}, blanks)

    def fill_method_blanks(self, method: Method, **values) -> None:
        blanks = {key: value for key, value in values.items() if value and not getattr(method, key)}
        if blanks:
            self.upsert(Method, {"pk": method.pk}, blanks)

    def hardware(self, name: str) -> Hardware | None:
        if not name:
            return None
        found = Hardware.objects.filter(name__iexact=name).first()
        return found or self.upsert(Hardware, {"name": name}, {})


def task_count(tasks: str, level: Level) -> int | None:
    """Tasks scored, from a 'Tasks=' value: '100 tasks' → 100, 'Full L2' → the level's count."""
    if not tasks:
        return None
    if tasks.lower().startswith("full"):
        return level.task_count
    match = FIRST_NUMBER.search(tasks)
    return int(match.group(1)) if match else None


# --- the level table -----------------------------------------------------------------------------------


def import_level_table(table: almanac.LevelTable, writer: Writer) -> None:
    level = Level.objects.get(benchmark__slug="kernelbench", number=table.level)
    source = writer.upsert(
        Source,
        {"title": f"Benchmark Almanac: {table.title}", "kind": Source.Kind.LEADERBOARD},
        {},
        on_create={"notes": "Column meanings: docs/almanac-import.md."},
    )
    metrics = Metric.objects.in_bulk()
    for row in table.rows:
        entry = table_entry(row, level, writer)
        for cell in row.cells:
            writer.upsert(
                Score,
                {
                    "entry": entry,
                    "metric": metrics[cell.metric_id],
                    "source": source,
                    "provenance": "reported",
                },
                {
                    "value": cell.value,
                    "as_written": cell.as_written,
                    "source_table": ALMANAC_TABLE_NAME,
                    "baseline": entry.baseline,
                    "n_tasks": entry.n_tasks,
                    **cell_conventions(row, cell),
                },
            )


def table_entry(row: almanac.TableRow, level: Level, writer: Writer) -> Entry:
    meta = row.metadata
    method = writer.method(method_name_of(row.label))
    writer.fill_method_blanks(
        method,
        backbone=meta.get("backbone", ""),
        agent_models=meta.get("Agent's Models") or meta.get("LLM", ""),
    )
    data_source = meta.get("data_source", "")
    source_note = load_catalogue().data_sources.get(data_source, {}).get("notes", "")
    return writer.upsert(
        Entry,
        {"import_key": f"almanac:L{level.number}:{row.method_cell}"},
        {
            "method": method,
            "level": level,
            "label": row.label,
            "hardware": writer.hardware(meta.get("Hardware Setup") or meta.get("GPU", "")),
            "data_source": data_source,
            "mode": meta.get("mode", ""),
            "reproduce": meta.get("reproduce", "").lower() == "true" or "(reproduce)" in row.label.lower(),
            "hyperparameters": [
                part.strip() for part in meta.get("Hyperparameter", "").split(";") if part.strip()
            ],
            "date": row.date,
            "task_subset": meta.get("Tasks", ""),
            "n_tasks": task_count(meta.get("Tasks", ""), level),
            "baseline": Baseline.EAGER,
            "metadata": meta,
        },
        on_create={"notes": source_note},
    )


def cell_conventions(row: almanac.TableRow, cell: almanac.Cell) -> dict:
    """The conventions a value of this column carries (docs/almanac-import.md explains each)."""
    if cell.metric_id in FAST_P_IDS:
        return {"aggregation": "rate", "threshold_op": ">=", "denominator": "all_samples", "notes": ""}
    if cell.metric_id == "correct_rate":
        return {"aggregation": "rate", "threshold_op": "", "denominator": "all_tasks", "notes": ""}
    if cell.metric_id == "success_rate":
        return {"aggregation": "rate", "threshold_op": "", "denominator": "unstated", "notes": ""}
    from_stats_table = any(other.metric_id in STATS_TABLE_IDS for other in row.cells)
    if cell.metric_id == "speedup_mean":
        stated = row.metadata.get("Metric Type", "")
        aggregation = METRIC_TYPES.get(stated.lower()) or ("arithmetic" if from_stats_table else "unstated")
        return {
            "aggregation": aggregation,
            "threshold_op": "",
            "denominator": "correct_only" if from_stats_table else "unstated",
            "notes": f"Metric Type={stated} as written." if stated else "",
        }
    aggregation = Metric.objects.values_list("aggregation", flat=True).get(pk=cell.metric_id)
    return {"aggregation": aggregation, "threshold_op": "", "denominator": "correct_only", "notes": ""}


# --- the launch-post list ------------------------------------------------------------------------------


CATALOGUE_FACTS = (("hardware", "hardware {}"), ("n_tasks", "{} tasks"), ("baseline", "baseline {}"))


def catalogue_facts(annotation: dict) -> dict[str, str]:
    """A metadata line naming what the entry takes from the project's catalogue, not from the almanac."""
    facts = [form.format(annotation[key]) for key, form in CATALOGUE_FACTS if annotation.get(key)]
    if not facts:
        return {}
    return {"from the catalogue": ", ".join(facts) + " (leaderboard/seed/catalogue.toml, read from the post)"}


def import_launch_posts(posts: almanac.LaunchPostList, writer: Writer) -> None:
    level = Level.objects.get(benchmark__slug="kernelbench", number=posts.level)
    metrics = Metric.objects.in_bulk()
    for post in posts.posts:
        annotation = load_catalogue().launch_posts.get(post.model, {})
        readings = almanac.read_launch_post(post, annotation)
        source = writer.upsert(
            Source,
            {"title": f"{post.model} launch post", "kind": Source.Kind.LAUNCH_POST},
            {"published": post.date},
        )
        entry = writer.upsert(
            Entry,
            {"import_key": f"almanac:L{level.number}:launch-post:{post.model}:{post.date.isoformat()}"},
            {
                "method": writer.method(post.model),
                "level": level,
                "label": post.model,
                "hardware": writer.hardware(annotation.get("hardware", "")),
                "data_source": f"{post.model} launch post",
                "date": post.date.replace(day=1),
                "n_tasks": annotation.get("n_tasks"),
                "baseline": readings[0].baseline,
                "metadata": {
                    "post date": post.date.isoformat(),
                    "as written": post.as_written,
                    **catalogue_facts(annotation),
                },
            },
            on_create={"notes": annotation.get("notes", "")},
        )
        for reading in readings:
            writer.upsert(
                Score,
                {
                    "entry": entry,
                    "metric": metrics[reading.metric_id],
                    "source": source,
                    "provenance": "reported",
                },
                {
                    "value": reading.value,
                    "as_written": post.as_written or post.score_as_written,
                    "source_table": "Launch post",
                    "baseline": reading.baseline,
                    "aggregation": reading.aggregation,
                    "denominator": "unstated",
                    "n_tasks": annotation.get("n_tasks"),
                    "notes": "" if reading.stated else annotation.get("notes", ""),
                },
            )


def import_almanac_text(text: str) -> ImportReport:
    """Parse an almanac page and write it in one transaction; a parse error writes nothing."""
    parsed = almanac.parse(text)
    writer = Writer()
    with transaction.atomic():
        if isinstance(parsed, almanac.LevelTable):
            import_level_table(parsed, writer)
        else:
            import_launch_posts(parsed, writer)
    return writer.report


__all__ = ["ImportReport", "Provenance", "Writer", "import_almanac_text"]
