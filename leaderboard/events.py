"""The change feed's rules: which events exist (new entries, verified runs, a new #1, curation decisions),
how each is read from stored data, and how a new #1 is recorded whenever scores change.

A new #1 is the top row of a level's Fast1 or Geomean table (its default lane and order, as the level
page shows it) changing: after every transaction that saves or deletes a score, the tables of the levels
it touched are read (from the table cache when current) and a `LeaderSnapshot` is stored when their
leader differs from the last one recorded. `/feed.atom` and `/changes/` both read `recent_events`.
"""

import datetime
import logging
from dataclasses import dataclass

from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.db.models.signals import post_delete, post_save
from django.urls import reverse

from leaderboard.models import Entry, LeaderSnapshot, Level, Score
from leaderboard.submissions.public_kernels import shown_runs

logger = logging.getLogger(__name__)

LEADER_VIEWS = ("fast1", "geomean")
"""The table views whose #1 the feed follows."""
MAX_EVENTS = 500
"""Events of each kind read for the feed and the changes page (newest first)."""


@dataclass(frozen=True)
class Event:
    """One change: its kind (entry, run, leader, curation), when, a title, a sentence and a page."""

    kind: str
    when: datetime.datetime
    title: str
    summary: str
    url: str
    key: str


def entry_events(limit: int) -> list[Event]:
    entries = Entry.objects.select_related("method", "level").order_by("-created", "-pk")[:limit]
    return [
        Event(
            "entry",
            entry.created,
            f"New entry: {entry.display_name} on level {entry.level.number}",
            " · ".join(text for text in (entry.data_source, entry.mode, entry.task_subset) if text),
            entry.get_absolute_url(),
            f"entry-{entry.pk}",
        )
        for entry in entries
    ]


def run_events(limit: int) -> list[Event]:
    """Completed runs with verified scores the public sees (not hidden), with their Fast1 against eager."""
    fast_1 = Score.objects.verified().filter(run=OuterRef("pk"), metric_id="fast_1", baseline="eager")
    runs = (
        shown_runs()
        .filter(finished__isnull=False)
        .annotate(fast_1=Subquery(fast_1.values("value")[:1]))
        .select_related("hardware", "submission__entry__method", "submission__entry__level")
        .order_by("-finished", "-pk")[:limit]
    )
    events = []
    for run in runs:
        entry = run.submission.entry
        figure = f"Fast1 {run.fast_1:g}" if run.fast_1 is not None else "no Fast1"
        events.append(
            Event(
                "run",
                run.finished,
                f"Verified run #{run.pk}: {entry.display_name} on level {entry.level.number}",
                f"{figure}; {run.hardware} ({run.device}), harness {run.harness_version}",
                run.get_absolute_url(),
                f"run-{run.pk}",
            )
        )
    return events


def leader_events(limit: int) -> list[Event]:
    snapshots = LeaderSnapshot.objects.filter(entry__isnull=False).select_related(
        "level", "entry__method", "previous_entry__method"
    )[:limit]
    events = []
    for snap in snapshots:
        before = f"; before: {snap.previous_entry.display_name}" if snap.previous_entry else ""
        value = f" ({snap.metric_id} {snap.value:g})" if snap.value is not None else ""
        events.append(
            Event(
                "leader",
                snap.created,
                f"New #1 on level {snap.level.number} ({snap.view}): {snap.entry.display_name}",
                f"{snap.entry.display_name} leads{value}{before}",
                f"{reverse('leaderboard:level', args=[snap.level.number])}?view={snap.view}",
                f"leader-{snap.pk}",
            )
        )
    return events


def curation_events(limit: int) -> list[Event]:
    """Changes of a score's curation state (flagged, hacked, hidden, restored), with their reason."""
    history = Score.history.model.objects
    changes = list(history.filter(history_type="~").order_by("-history_date", "-history_id")[: limit * 4])
    earlier = history.filter(id__in={change.id for change in changes}).order_by("id", "history_id")
    previous_state, last = {}, {}
    for record in earlier.values("id", "history_id", "state"):
        previous_state[record["history_id"]] = last.get(record["id"])
        last[record["id"]] = record["state"]
    entries = Entry.objects.in_bulk({change.entry_id for change in changes})
    events = []
    for change in changes:
        before = previous_state.get(change.history_id)
        entry = entries.get(change.entry_id)
        if before is None or before == change.state or entry is None or len(events) == limit:
            continue
        who = f" by {change.history_user}" if change.history_user_id else ""
        reason = f": {change.state_reason}" if change.state_reason else ""
        events.append(
            Event(
                "curation",
                change.history_date,
                f"Score {change.metric_id} of {entry.display_name} {before} → {change.state}",
                f"Marked {change.state}{who}{reason}",
                entry.get_absolute_url(),
                f"curation-{change.history_id}",
            )
        )
    return events


def recent_events(limit: int = MAX_EVENTS) -> list[Event]:
    """Every kind of event, newest first, at most `limit`."""
    events = entry_events(limit) + run_events(limit) + leader_events(limit) + curation_events(limit)
    events.sort(key=lambda event: (event.when, event.key), reverse=True)
    return events[:limit]


def current_leader(level_number: int, view: str):
    """(row, sort key) of a view's #1, or (None, sort key) when no row has a value to rank by."""
    from leaderboard import table as tables

    built = tables.build_table(level_number, tables.TableQuery(view=view, per_page=1))
    top = built.rows[0] if built.rows else None
    if top is None or top.rank != 1 or top.value_of(built.sort_key) is None:
        return None, built.sort_key
    return top, built.sort_key


def record_leaders(level_ids) -> list[LeaderSnapshot]:
    """Store a snapshot for each followed view of these levels whose #1 changed; return the new ones."""
    made = []
    for level_id in sorted(level_ids):
        made += record_level_leaders(level_id)
    return made


@transaction.atomic
def record_level_leaders(level_id: int) -> list[LeaderSnapshot]:
    """One level's new snapshots, with its row locked (on PostgreSQL; SQLite has no row locks): two
    processes committing scores at once compare with each other's snapshot, so one change of #1 is
    recorded once."""
    level = Level.objects.select_for_update().filter(pk=level_id).first()
    if level is None:
        return []
    made = []
    for view in LEADER_VIEWS:
        top, metric_id = current_leader(level.number, view)
        last = LeaderSnapshot.objects.filter(level=level, view=view).first()
        entry_id = top.entry_id if top else None
        if (last.entry_id if last else None) == entry_id:
            continue
        value = top.value_of(metric_id) if top else None
        made.append(
            LeaderSnapshot.objects.create(
                level=level,
                view=view,
                entry_id=entry_id,
                metric_id=metric_id if top else "",
                value=value if isinstance(value, int | float) else None,
                previous_entry_id=last.entry_id if last else None,
            )
        )
    return made


class LeadersCheck:
    """A callback run once the transaction commits: record the leaders of one level."""

    def __init__(self, level_id: int):
        self.level_id = level_id
        self.done = False

    def __call__(self):
        self.done = True
        try:
            record_leaders([self.level_id])
        except Exception:  # the feed must never break the write that triggered it
            logger.exception("could not record the leaders of level %s", self.level_id)


def schedule_leaders_check(sender, instance, **kwargs) -> None:
    """After a score is saved or deleted: check its level's leaders once the transaction commits (once
    per level and transaction)."""
    level_id = Entry.objects.filter(pk=instance.entry_id).values_list("level_id", flat=True).first()
    if level_id is None:
        return
    connection = transaction.get_connection()
    pending = (callback for _, callback, _ in connection.run_on_commit)
    if any(isinstance(c, LeadersCheck) and c.level_id == level_id and not c.done for c in pending):
        return
    transaction.on_commit(LeadersCheck(level_id))


def connect_signals() -> None:
    post_save.connect(schedule_leaders_check, sender=Score, dispatch_uid="events-leaders-save")
    post_delete.connect(schedule_leaders_check, sender=Score, dispatch_uid="events-leaders-delete")
