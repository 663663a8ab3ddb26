"""Reported ↔ verified pairing: the one rule that matches a verified entry to its method's reported entry.

The rule: a verified entry (one with rankable verified scores) is paired with an entry of the same method
on the same level that has rankable reported scores and no verified ones; a reported entry that states its
hardware must be on the hardware of the verified entry's newest run, one that states none matches any.
Among several, the one whose hardware is stated (and matches) wins, then the newest date, then the newest
entry. A manual pairing (staff's choice in the admin, unpaired included) is never changed here.
"""

import datetime
import logging

from django.db import transaction
from django.db.models import Exists, OuterRef

from leaderboard import scoring
from leaderboard.models import Entry, EvaluationRun, Pairing, Score

logger = logging.getLogger(__name__)


def verified_run_hardware(entry: Entry) -> int | None:
    """The hardware id of the entry's newest run with rankable verified scores (None: not verified)."""
    run_ids = Score.objects.verified().rankable().filter(entry=entry).values_list("run_id", flat=True)
    newest = scoring.latest_verified_run(run_ids)
    if newest is None:
        return None
    return EvaluationRun.objects.filter(pk=newest).values_list("hardware_id", flat=True).first()


def reported_candidates(entry: Entry):
    """Entries of the method on the level with rankable reported scores and no verified score."""
    reported = Score.objects.reported().rankable().filter(entry=OuterRef("pk"))
    verified = Score.objects.verified().filter(entry=OuterRef("pk"))
    return (
        Entry.objects.filter(method_id=entry.method_id, level_id=entry.level_id)
        .exclude(pk=entry.pk)
        .filter(Exists(reported))
        .exclude(Exists(verified))
    )


def preference(candidate: Entry) -> tuple:
    """Stated (matching) hardware first, then the newest date, then the newest entry."""
    return (candidate.hardware_id is not None, candidate.date or datetime.date.min, candidate.pk)


def match(entry: Entry) -> Entry | None:
    """The reported entry the rule pairs this verified entry with, or None."""
    hardware_id = verified_run_hardware(entry)
    if hardware_id is None:
        return None
    eligible = [
        candidate
        for candidate in reported_candidates(entry)
        if candidate.hardware_id is None or candidate.hardware_id == hardware_id
    ]
    return max(eligible, key=preference, default=None)


@transaction.atomic
def pair_entry(entry: Entry) -> Pairing | None:
    """Apply the rule to one entry: create, update or remove its automatic pairing; a manual one stays."""
    existing = Pairing.objects.select_for_update().filter(verified=entry).first()
    if existing is not None and existing.mode == Pairing.Mode.MANUAL:
        return existing
    target = match(entry)
    if target is None:
        if existing is not None:
            existing.delete()
        return None
    if existing is not None and existing.reported_id == target.pk:
        return existing
    pairing, _ = Pairing.objects.update_or_create(
        verified=entry, defaults={"reported": target, "mode": Pairing.Mode.AUTO}
    )
    logger.info("paired verified entry %s with reported entry %s", entry.pk, target.pk)
    return pairing


def pair_all() -> dict[str, int]:
    """Re-pair every verified entry (and drop automatic pairings whose entry is no longer verified)."""
    counts = {"paired": 0, "unpaired": 0, "manual": 0}
    verified = Entry.objects.filter(Exists(Score.objects.verified().filter(entry=OuterRef("pk"))))
    stale = Pairing.objects.filter(mode=Pairing.Mode.AUTO).exclude(verified__in=verified)
    counts["unpaired"] += stale.count()
    stale.delete()
    for entry in verified.order_by("pk"):
        pairing = pair_entry(entry)
        if pairing is None:
            counts["unpaired"] += 1
        elif pairing.mode == Pairing.Mode.MANUAL:
            counts["manual"] += 1
        else:
            counts["paired"] += 1
    return counts
