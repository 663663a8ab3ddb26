"""What a Python function runs (its code, defaults and keyword defaults), recorded to find one swapped under
the same function object, where an identity check sees nothing."""

from __future__ import annotations

import types
from typing import Any, NamedTuple

BOUND = (staticmethod, classmethod, types.MethodType)  # wrappers whose __func__ is what runs


class Runs(NamedTuple):
    """What a watched Python function runs, as the snapshot found it: its code, its defaults and its keyword
    defaults (the dict and its values), each of which can be swapped while the function stays the same
    object."""

    name: str
    function: types.FunctionType
    code: types.CodeType
    defaults: tuple | None
    keywords: dict | None
    keyword_values: tuple


def runs_of(name: str, value: Any) -> Runs | None:
    function = value.__func__ if isinstance(value, BOUND) else value
    if type(function) is not types.FunctionType:
        return None
    keywords = function.__kwdefaults__
    values = tuple(keywords.values()) if keywords else ()
    return Runs(name, function, function.__code__, function.__defaults__, keywords, values)


def swapped_runs(functions: list[Runs]) -> set[str]:
    """The functions whose code, defaults or keyword defaults are no longer what the snapshot found."""
    swapped = {
        name
        for name, function, code, defaults, keywords, _ in functions
        if function.__code__ is not code
        or function.__defaults__ is not defaults
        or function.__kwdefaults__ is not keywords
    }
    for name, _, _, _, keywords, values in functions:
        if keywords is not None and (
            len(keywords) != len(values)
            or any(a is not b for a, b in zip(keywords.values(), values, strict=False))
        ):
            swapped.add(name)
    return swapped


def note_runs(runs: dict[int, Runs], prefix: str, values: dict[str, Any]) -> None:
    """What each Python function among values runs, by the function's id (a function bound under several
    names, or wrapped in a staticmethod, counts once)."""
    for key, value in values.items():
        found = runs_of(f"{prefix}.{key}", value)
        if found is not None and id(found.function) not in runs:
            runs[id(found.function)] = found
