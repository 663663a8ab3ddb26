"""Template filters for numbers and records: `{{ value|metric_value:unit }}` prints a value as tables do
(70.6, not 70.6000); `{{ mapping|flat_items }}` turns a nested record into (key, text) rows."""

from django import template

from leaderboard.views.text import format_value

register = template.Library()

MAX_DEPTH = 4


@register.filter
def metric_value(value, unit: str = "") -> str:
    return format_value(value, unit or "")


def flatten(value, prefix: str = "", depth: int = 0) -> list[tuple[str, str]]:
    """Nested dicts and lists as 'outer › inner' keys with plain-text values."""
    if isinstance(value, dict) and depth < MAX_DEPTH:
        rows = []
        for key, inner in value.items():
            rows += flatten(inner, f"{prefix} › {key}" if prefix else str(key), depth + 1)
        return rows or [(prefix, "—")]
    if isinstance(value, list | tuple):
        if all(not isinstance(item, dict | list | tuple) for item in value):
            return [(prefix, ", ".join(str(item) for item in value) or "—")]
        rows = []
        for index, item in enumerate(value, 1):
            rows += flatten(item, f"{prefix} {index}", depth + 1)
        return rows
    if value is None or value == "":
        return [(prefix, "—")]
    return [(prefix, str(value))]


@register.filter
def flat_items(mapping) -> list[tuple[str, str]]:
    return flatten(mapping) if isinstance(mapping, dict) else []
