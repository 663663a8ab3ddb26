"""Built leaderboard tables kept in this process until the data they show changes.

Every save or delete of a model the tables show bumps `DataVersion` inside the same transaction, so a new
version becomes visible exactly when the change does (and a rolled-back change bumps nothing). A table is
cached under the version read in the same query as its level; a reader who sees version v therefore never
gets a table built from data older than v. Bulk `update()`s bypass signals: code that changes shown data
that way must call `bump()` itself.

What is built for the cache is built with Python's cyclic garbage collector paused: a build allocates tens
of thousands of small objects, enough to set off full collections that walk every object of the loaded
site, and those pauses made most of a cold build's p95 (docs/performance.md). Garbage in cycles is not
lost, only collected after the build, by the next collection.
"""

import contextlib
import gc
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator

from django.apps import apps
from django.db.models import F
from django.db.models.signals import post_delete, post_save

from leaderboard.models import DataVersion

SHOWN_MODELS = (
    "leaderboard.Score",
    "leaderboard.Entry",
    "leaderboard.Method",
    "leaderboard.Source",
    "leaderboard.Hardware",
    "leaderboard.Level",
    "leaderboard.Metric",
    "leaderboard.EvaluationRun",
    "leaderboard.TaskResult",
    "leaderboard.Pairing",
    "leaderboard.ReportedTaskResult",
    "tasks.Task",
)
"""Models whose rows appear in tables, charts or their exports."""

MAX_TABLES = 48
"""Tables kept per process (least recently used dropped first)."""


def bump(**signal_kwargs) -> None:
    """Advance the data version; the first bump creates it at a random value (a flushed database starts
    again somewhere no cache of the old one can match)."""
    if not DataVersion.objects.filter(pk=1).update(value=F("value") + 1):
        DataVersion.objects.get_or_create(pk=1, defaults={"value": secrets.randbits(62)})


def connect_signals() -> None:
    for label in SHOWN_MODELS:
        model = apps.get_model(label)
        post_save.connect(bump, sender=model, dispatch_uid=f"table-cache-save-{label}")
        post_delete.connect(bump, sender=model, dispatch_uid=f"table-cache-delete-{label}")


class CollectorPause:
    """Pauses the cyclic garbage collector while any thread is inside; the last one out restores it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._inside = 0
        self._restore = False

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._inside == 0:
                self._restore = gc.isenabled()
                gc.disable()
            self._inside += 1
        try:
            yield
        finally:
            with self._lock:
                self._inside -= 1
                if self._inside == 0 and self._restore:
                    gc.enable()


collector_paused = CollectorPause()


class LruCache:
    """A small thread-safe least-recently-used mapping."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get_or_build(self, key: Hashable, build: Callable):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        with collector_paused():
            value = build()
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


tables = LruCache(MAX_TABLES)
