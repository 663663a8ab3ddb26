"""What a Python function runs (its code, defaults and keyword defaults), recorded to find one swapped under
the same function object, where an identity check sees nothing."""

from __future__ import annotations

import types
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple

BOUND = (staticmethod, classmethod, types.MethodType)  # wrappers whose __func__ is what runs


class Runs(NamedTuple):
    """What a watched Python function runs, as the snapshot found it: its code, its defaults and its keyword
    defaults (the dict, and its keys and values in order), each of which can be swapped while the function
    stays the same object."""

    name: str
    function: types.FunctionType
    code: types.CodeType
    defaults: tuple | None
    keywords: dict | None
    keyword_items: tuple  # ((key, value), ...) as recorded


def runs_of(name: str, value: Any) -> Runs | None:
    function = value.__func__ if isinstance(value, BOUND) else value
    if type(function) is not types.FunctionType:
        return None
    keywords = function.__kwdefaults__
    items = tuple(keywords.items()) if keywords else ()
    return Runs(name, function, function.__code__, function.__defaults__, keywords, items)


# What a function runs, read now (its attribute) and as recorded (the field of Runs).
FIELDS = ((attrgetter("__code__"), 2), (attrgetter("__defaults__"), 3), (attrgetter("__kwdefaults__"), 4))


def keywords_changed(keywords: dict | None, items: tuple) -> bool:
    """A keyword-defaults dict changed in place since its items were recorded (a value replaced, or the
    same values moved to other keys)."""
    if keywords is None:
        return False
    if len(keywords) != len(items):
        return True
    return any(
        key is not was_key or value is not was_value
        for (key, value), (was_key, was_value) in zip(keywords.items(), items, strict=True)
    )


def swapped_runs(functions: list[Runs]) -> set[str]:
    """The functions whose code, defaults or keyword defaults are no longer what the snapshot found."""
    return {
        name
        for name, function, code, defaults, keywords, items in functions
        if function.__code__ is not code
        or function.__defaults__ is not defaults
        or function.__kwdefaults__ is not keywords
        or keywords_changed(keywords, items)
    }


class RunsRecord:
    """What the watched functions ran when recorded, with its ids as tuples: a check compares them at once,
    in C, and goes function by function only where something differs (about 25,000 functions)."""

    def __init__(self, functions: list[Runs]):
        self.functions = functions
        self.objects = list(map(itemgetter(1), functions))
        self.recorded = [tuple(map(id, map(itemgetter(field), functions))) for _, field in FIELDS]
        self.keywords = [found.keywords for found in functions if found.keywords is not None]
        # every keyword-defaults dict's keys and values, in order, as one flat tuple of ids
        self.keyword_ids = keyword_ids(self.keywords)

    def swapped(self) -> set[str]:
        now = [tuple(map(id, map(read, self.objects))) for read, _ in FIELDS]
        if now == self.recorded and keyword_ids(self.keywords) == self.keyword_ids:
            return set()
        return swapped_runs(self.functions)


def keyword_ids(dicts: list[dict]) -> tuple[int, ...]:
    """The ids of the dicts' keys and values, pair by pair, dict after dict (a value replaced, a key renamed
    or the same values moved to other keys changes it; so does a pair added or removed)."""
    return tuple(map(id, chain.from_iterable(chain.from_iterable(map(dict.items, dicts)))))


def note_runs(runs: dict[int, Runs], prefix: str, values: dict[str, Any]) -> None:
    """What each Python function among values runs, by the function's id (a function bound under several
    names, or wrapped in a staticmethod, counts once)."""
    for key, value in values.items():
        found = runs_of(f"{prefix}.{key}", value)
        if found is not None and id(found.function) not in runs:
            runs[id(found.function)] = found
