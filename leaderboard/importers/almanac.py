"""Parse the Benchmark Almanac's two page formats: a level table and a launch-post list (no database)."""

import datetime
import re
from dataclasses import dataclass, field

from leaderboard.importers.errors import ImportFormatError
from leaderboard.models import METRIC_COLUMNS

METADATA_KEYS = (
    "backbone",
    "reproduce",
    "mode",
    "data_source",
    "Hardware Setup",
    "Agent's Models",
    "Hyperparameter",
    "LLM",
    "GPU",
    "Metric Type",
    "Tasks",
    "Method",
    "Training Protocol",
)
"""The key=value metadata keys a method cell may carry."""

MISSING = "—"
TABLE_HEADER = re.compile(r"^\|\s*Method\s*\|")
LEVEL_IN_TITLE = re.compile(r"Kernel\s?Bench\s+(?:Level\s+|L)(\d)\b")
CELL_DATE = re.compile(r"(\d{4})\.(\d{2})$")
NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
NEXT_KEY = re.compile(", (?=(?:" + "|".join(re.escape(k) for k in METADATA_KEYS) + ")=)")
LAUNCH_POST_HEADER = "DateLaunch postScoreAs the post writes it"
LAUNCH_POST_ROW = re.compile(
    r"^(?P<date>[A-Z][a-z]{2} \d{1,2}, \d{4}) (?P<model>\S+) (?P<score>\d+(?:\.\d+)?)(?: (?P<text>.+))?$"
)


@dataclass(frozen=True)
class Cell:
    metric_id: str
    value: float
    as_written: str


@dataclass(frozen=True)
class TableRow:
    """One row of a level table: the method cell, taken apart, and its non-missing values."""

    line: int
    method_cell: str
    label: str
    metadata: dict[str, str]
    date: datetime.date
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class LevelTable:
    title: str
    level: int
    rows: list[TableRow] = field(default_factory=list)


@dataclass(frozen=True)
class LaunchPost:
    """One launch post's listing: date, model, headline score and the text as the post writes it."""

    line: int
    date: datetime.date
    model: str
    score: float
    score_as_written: str
    as_written: str


@dataclass(frozen=True)
class LaunchPostList:
    title: str
    level: int
    posts: list[LaunchPost] = field(default_factory=list)


def parse(text: str) -> LevelTable | LaunchPostList:
    """Parse either almanac format, telling them apart by their headers."""
    lines = text.splitlines()
    if any(TABLE_HEADER.match(line) for line in lines):
        return parse_level_table(lines)
    if any(line.strip() == LAUNCH_POST_HEADER for line in lines):
        return parse_launch_posts(lines)
    raise ImportFormatError.at(1, "neither an almanac level table ('| Method |') nor a launch-post list")


def find_level(lines: list[str]) -> tuple[str, int]:
    """The page title and its KernelBench level, from the first line that names one."""
    for line in lines:
        match = LEVEL_IN_TITLE.search(line)
        if match:
            return line.strip(), int(match.group(1))
    raise ImportFormatError.at(1, "no title naming the KernelBench level (e.g. 'KernelBench Level 2')")


def parse_level_table(lines: list[str]) -> LevelTable:
    title, level = find_level(lines)
    header = next(i for i, line in enumerate(lines) if TABLE_HEADER.match(line))
    rows, problems = [], []
    for index in range(header + 1, len(lines)):
        line = lines[index]
        if not line.startswith("|"):
            break
        if set(line.replace("|", "").strip()) <= {"-", ":", " "}:
            continue  # a separator row
        try:
            rows.append(parse_table_row(index + 1, line))
        except ImportFormatError as error:
            problems.extend(error.problems)
    if problems:
        raise ImportFormatError(problems)
    if not rows:
        raise ImportFormatError.at(header + 1, "the table has no rows")
    return LevelTable(title, level, rows)


def parse_table_row(line_no: int, line: str) -> TableRow:
    cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
    expected = 1 + len(METRIC_COLUMNS)
    if cells[-1] == "":
        cells = cells[:-1]  # the page's last, unlabelled column is empty in every row
    if len(cells) != expected:
        raise ImportFormatError.at(
            line_no, f"expected {expected} cells (method + {len(METRIC_COLUMNS)} values), found {len(cells)}"
        )
    label, metadata, date = parse_method_cell(line_no, cells[0])
    values = tuple(
        parse_value(line_no, position, metric_id, text)
        for position, (metric_id, text) in enumerate(zip(METRIC_COLUMNS, cells[1:], strict=True), start=1)
    )
    return TableRow(line_no, cells[0], label, metadata, date, tuple(v for v in values if v is not None))


def parse_value(line_no: int, column: int, metric_id: str, text: str) -> Cell | None:
    if text == MISSING:
        return None
    if not NUMBER.match(text):
        raise ImportFormatError.at(
            line_no, f"column {column} ({metric_id}): {text!r} is neither a number nor —"
        )
    return Cell(metric_id, float(text), text)


def parse_method_cell(line_no: int, cell: str) -> tuple[str, dict[str, str], datetime.date]:
    """Split 'NameKey=value, Key=value2026.06' into the name, the metadata and the date."""
    date_match = CELL_DATE.search(cell)
    if not date_match:
        raise ImportFormatError.at(line_no, f"method cell {cell!r} does not end with a YYYY.MM date")
    year, month = int(date_match.group(1)), int(date_match.group(2))
    if not 1 <= month <= 12:
        raise ImportFormatError.at(line_no, f"method cell {cell!r}: month {month} is not 01-12")
    body = cell[: date_match.start()]
    label, metadata = split_metadata(line_no, body)
    if not label:
        raise ImportFormatError.at(line_no, f"method cell {cell!r} has no method name")
    return label, metadata, datetime.date(year, month, 1)


def split_metadata(line_no: int, body: str) -> tuple[str, dict[str, str]]:
    """The name is everything before the first known key that directly precedes the first '='."""
    if "=" not in body:
        return body.strip(), {}
    head = body[: body.index("=")]
    key = max((k for k in METADATA_KEYS if head.endswith(k)), key=len, default=None)
    if key is None:
        raise ImportFormatError.at(line_no, f"unknown metadata key before '=' in {head!r}")
    label = head[: -len(key)].strip()
    metadata = {}
    for pair in NEXT_KEY.split(body[len(head) - len(key) :]):
        name, _, value = pair.partition("=")
        if "=" in value:
            raise ImportFormatError.at(line_no, f"unknown metadata key inside {pair!r}")
        metadata[name] = value.strip()
    return label, metadata


def parse_launch_posts(lines: list[str]) -> LaunchPostList:
    title, level = find_level(lines)
    start = next(i for i, line in enumerate(lines) if line.strip() == LAUNCH_POST_HEADER) + 1
    posts = []
    for index in range(start, len(lines)):
        line = lines[index].strip()
        if not line:
            break
        match = LAUNCH_POST_ROW.match(line)
        if not match:
            raise ImportFormatError.at(index + 1, f"not a 'Mon D, YYYY model score text' row: {line!r}")
        date = datetime.datetime.strptime(match["date"], "%b %d, %Y").date()
        posts.append(
            LaunchPost(
                index + 1, date, match["model"], float(match["score"]), match["score"], match["text"] or ""
            )
        )
    if not posts:
        raise ImportFormatError.at(start, "the launch-post list has no rows")
    return LaunchPostList(title, level, posts)


# --- reading launch posts: which metric and baseline a headline number is -------------------------------

METRIC_PHRASES = (
    ("geometric mean", "speedup_geomean"),
    ("geomean", "speedup_geomean"),
    ("median speedup", "speedup_median"),
    ("share faster", "pct_faster"),
    ("faster rate", "pct_faster"),
    ("mean speedup", "speedup_mean"),
    ("average speedup", "speedup_mean"),
)
AGGREGATION_OF = {
    "speedup_geomean": "geometric",
    "speedup_median": "median",
    "speedup_mean": "arithmetic",
    "pct_faster": "rate",
}
VALUES_WITH_LEGEND = re.compile(r"(?P<values>\d+(?:\.\d+)?%?(?:/\d+(?:\.\d+)?%?)+)\s*\((?P<legend>[^)]*)\)")


@dataclass(frozen=True)
class Reading:
    """One reported value read off a launch post, with the metric and baseline it refers to."""

    metric_id: str
    value: float
    as_written: str
    baseline: str
    aggregation: str
    stated: bool  # whether the post's own text names the metric (else the catalogue's reading was used)


def metric_in(text: str) -> str | None:
    lowered = text.lower()
    return next((metric for phrase, metric in METRIC_PHRASES if phrase in lowered), None)


def baseline_in(text: str) -> str | None:
    lowered = text.lower()
    if "torch.compile" in lowered:
        return "compile"
    if "eager" in lowered:
        return "eager"
    return None


def read_launch_post(post: LaunchPost, annotation: dict | None) -> list[Reading]:
    """The values a post reports; the catalogue's annotation fills what the text leaves unsaid."""
    annotation = annotation or {}
    fallback_baseline = annotation.get("baseline", "unstated")
    legend = VALUES_WITH_LEGEND.search(post.as_written)
    if legend:
        values = legend["values"].split("/")
        labels = [label.strip() for label in legend["legend"].split("/")]
        if len(values) == len(labels) and all(metric_in(label) for label in labels):
            return [
                Reading(
                    metric_in(label),
                    float(value.rstrip("%")),
                    value,
                    baseline_in(label) or baseline_in(post.as_written) or fallback_baseline,
                    AGGREGATION_OF[metric_in(label)],
                    True,
                )
                for value, label in zip(values, labels, strict=True)
            ]
    stated = metric_in(post.as_written)
    metric = stated or annotation.get("metric")
    if metric is None:
        raise ImportFormatError.at(
            post.line,
            f"cannot tell which metric {post.model}'s {post.score_as_written} is; add a [[launch_post]]",
        )
    baseline = baseline_in(post.as_written) or fallback_baseline
    return [
        Reading(metric, post.score, post.score_as_written, baseline, AGGREGATION_OF[metric], bool(stated))
    ]
