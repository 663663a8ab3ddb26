"""Parse and write a plain CSV of reported scores, one row per cell (columns: docs/importing.md)."""

import csv
import datetime
import io
import math
from dataclasses import dataclass

from django.db import transaction

from leaderboard.importers.errors import ImportFormatError
from leaderboard.importers.writer import ImportReport, Writer
from leaderboard.models import (
    Aggregation,
    Baseline,
    Denominator,
    Entry,
    Level,
    Metric,
    Provenance,
    Score,
    Source,
    ThresholdOp,
)

REQUIRED = ("level", "method", "metric", "value", "source_title")
OPTIONAL = (
    "entry_label", "hardware", "baseline", "date", "data_source", "mode", "reproduce", "task_subset",
    "n_tasks", "as_written", "source_kind", "arxiv_id", "url", "table", "aggregation", "threshold_op",
    "denominator", "notes",
)  # fmt: skip
ENTRY_KEY_COLUMNS = ("level", "entry_label", "hardware", "baseline", "data_source", "mode", "date")
CHOICES = {
    "baseline": Baseline.values,
    "source_kind": Source.Kind.values,
    "aggregation": Aggregation.values,
    "threshold_op": [">", ">="],
    "denominator": Denominator.values,
}


@dataclass(frozen=True)
class CsvScore:
    line: int
    row: dict[str, str]
    value: float
    level: int
    date: datetime.date | None
    n_tasks: int | None


def parse_csv(text: str) -> list[CsvScore]:
    """Validate every row; raise one error naming every bad line, or return the rows."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [column for column in REQUIRED if column not in (reader.fieldnames or [])]
    if missing:
        raise ImportFormatError.at(1, f"missing columns: {', '.join(missing)}")
    unknown = [column for column in reader.fieldnames if column not in REQUIRED + OPTIONAL]
    if unknown:
        raise ImportFormatError.at(1, f"unknown columns: {', '.join(unknown)}")
    metric_ids = set(Metric.objects.values_list("id", flat=True))
    rows, problems = [], []
    for line, raw in enumerate(reader, start=2):
        row = {key: (value or "").strip() for key, value in raw.items() if key is not None}
        try:
            rows.append(parse_row(line, row, metric_ids))
        except ImportFormatError as error:
            problems.extend(error.problems)
    if problems:
        raise ImportFormatError(problems)
    if not rows:
        raise ImportFormatError.at(2, "no rows")
    return rows


def finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def parse_row(line: int, row: dict[str, str], metric_ids: set[str]) -> CsvScore:
    problems = [(line, f"{column} is empty") for column in REQUIRED if not row.get(column)]
    if row.get("metric") and row["metric"] not in metric_ids:
        problems.append((line, f"unknown metric {row['metric']!r}"))
    problems += [
        (line, f"{column} must be one of {', '.join(allowed)}")
        for column, allowed in CHOICES.items()
        if row.get(column) and row[column] not in allowed
    ]
    converters = {
        "value": finite_float,
        "level": int,
        "date": lambda text: datetime.datetime.strptime(text, "%Y.%m").date(),
        "n_tasks": int,
    }
    parsed = {}
    for column, convert in converters.items():
        try:
            parsed[column] = convert(row[column]) if row.get(column) else None
        except ValueError:
            problems.append((line, f"{column}: {row[column]!r} is not a valid {column.replace('_', ' ')}"))
    value, level, date, n_tasks = (parsed.get(column) for column in converters)
    if level not in (None, 1, 2, 3):
        problems.append((line, f"level must be 1, 2 or 3, not {level}"))
    if problems:
        raise ImportFormatError(problems)
    return CsvScore(line, row, value, level, date, n_tasks)


def write_row(item: CsvScore, writer: Writer, levels: dict[int, Level], metrics: dict[str, Metric]) -> None:
    row = item.row
    source = writer.upsert(
        Source,
        {"title": row["source_title"], "kind": row.get("source_kind") or Source.Kind.PAPER},
        {key: row[key] for key in ("arxiv_id", "url") if row.get(key)},
    )
    key = "|".join(row.get(column, "") for column in ENTRY_KEY_COLUMNS[1:])
    method = writer.method(row["method"])
    entry = writer.upsert(
        Entry,
        {"import_key": f"csv:L{item.level}:{row['method']}|{key}"},
        {
            "method": method,
            "level": levels[item.level],
            "label": row.get("entry_label", ""),
            "hardware": writer.hardware(row.get("hardware", "")),
            "data_source": row.get("data_source", ""),
            "mode": row.get("mode", ""),
            "reproduce": row.get("reproduce", "").lower() in {"1", "true", "yes"},
            "date": item.date,
            "task_subset": row.get("task_subset", ""),
            "n_tasks": item.n_tasks,
            "baseline": row.get("baseline") or Baseline.EAGER,
        },
    )
    metric = metrics[row["metric"]]
    writer.upsert(
        Score,
        {"entry": entry, "metric": metric, "source": source, "provenance": Provenance.REPORTED},
        {
            "value": item.value,
            "as_written": row.get("as_written") or row["value"],
            "source_table": row.get("table", ""),
            "aggregation": row.get("aggregation") or metric.aggregation,
            "threshold_op": row.get("threshold_op") or (ThresholdOp.NONE if not metric.is_fast_p else ">"),
            "denominator": row.get("denominator") or metric.denominator,
            "baseline": entry.baseline,
            "n_tasks": item.n_tasks,
            "notes": row.get("notes", ""),
        },
    )


def import_scores_csv(text: str) -> ImportReport:
    """Validate the whole file, then write it in one transaction."""
    rows = parse_csv(text)
    writer = Writer()
    levels = {level.number: level for level in Level.objects.filter(benchmark__slug="kernelbench")}
    metrics = Metric.objects.in_bulk()
    with transaction.atomic():
        for item in rows:
            write_row(item, writer, levels, metrics)
    return writer.report


__all__ = ["Score", "import_scores_csv", "parse_csv"]
