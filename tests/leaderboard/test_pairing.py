"""Reported ↔ verified pairing: the rule, its call after verified scores are written, the command, the
manual choices staff make in the admin, and the row, JSON and entry page showing both values and the gap."""

import datetime

import pytest
from django.core.management import call_command
from django.http import QueryDict
from django.urls import reverse

from leaderboard import pairing
from leaderboard.models import Method, Pairing
from leaderboard.submissions import verified as verified_scores
from leaderboard.table import build_table
from leaderboard.views.params import parse_query
from tests.leaderboard import factories

FIVE_FAST = factories.FIVE_FAST  # Fast1 over 10 tasks: 1.5, 2.5 and 1.1 beat 1x → 30 %


@pytest.fixture
def method(db) -> Method:
    return factories.method("Kernel-Agent")


def reported_entry(method: Method, gpu: str | None = "H100", fast_1: float = 50.0, **fields):
    entry = factories.entry(method=method, gpu=gpu, **fields)
    factories.reported(entry, "fast_1", fast_1)
    return entry


def verified_entry(method: Method, gpu: str = "H100"):
    entry = factories.entry(method=method, label=f"{method.name} (verified)")
    factories.verified_run(entry, FIVE_FAST, gpu=gpu, n_tasks=10)
    return entry


def row_of(entry_id: int):
    table = build_table(2, parse_query(QueryDict("")), paginate=False)
    return next(row for row in table.all_rows if row.entry_id == entry_id)


def test_a_verified_entry_pairs_with_its_methods_reported_entry_on_the_same_hardware(method):
    reported = reported_entry(method, gpu="H100")
    reported_entry(method, gpu="L40S", fast_1=80.0)  # other hardware: never
    reported_entry(factories.method("Someone else"), gpu="H100")  # other method: never
    verified = verified_entry(method, gpu="H100")
    found = pairing.pair_entry(verified)
    assert (found.reported, found.mode) == (reported, Pairing.Mode.AUTO)


def test_hardware_stated_and_matching_wins_over_unstated_then_the_newest(method):
    reported_entry(method, gpu=None, date=datetime.date(2026, 9, 1))
    stated = reported_entry(method, gpu="H100", date=datetime.date(2026, 1, 1))
    assert pairing.match(verified_entry(method)) == stated
    other = factories.method("Other")
    reported_entry(other, gpu=None, date=datetime.date(2026, 1, 1))
    newest = reported_entry(other, gpu=None, date=datetime.date(2026, 8, 1))
    assert pairing.match(verified_entry(other)) == newest


def test_no_match_on_other_hardware_or_another_level(method):
    reported_entry(method, gpu="L40S")
    reported_entry(method, gpu="H100", number=1)
    assert pairing.pair_entry(verified_entry(method, gpu="H100")) is None
    assert not Pairing.objects.exists()


def test_writing_verified_scores_pairs_the_entry(method):
    reported = reported_entry(method)
    verified = verified_entry(method)
    assert not Pairing.objects.exists()
    verified_scores.write_scores(verified.submissions.get().runs.get())
    assert Pairing.objects.get(verified=verified).reported == reported


def test_manual_choices_are_never_overwritten(method):
    reported = reported_entry(method)
    verified = verified_entry(method)
    Pairing.objects.create(verified=verified, reported=None, mode=Pairing.Mode.MANUAL)
    assert pairing.pair_all() == {"paired": 0, "unpaired": 0, "manual": 1}
    verified_scores.write_scores(verified.submissions.get().runs.get())
    assert Pairing.objects.get(verified=verified).reported is None
    other = factories.entry(method=method, gpu="H100")
    Pairing.objects.filter(verified=verified).update(reported=other)
    call_command("pair_entries", verbosity=0)
    assert Pairing.objects.get(verified=verified).reported == other
    assert reported != other


def test_pair_entries_command_pairs_all_and_drops_stale_automatic_pairings(method, capsys):
    reported = reported_entry(method)
    verified = verified_entry(method)
    lonely = verified_entry(factories.method("Lonely"))
    stale = Pairing.objects.create(verified=reported, reported=verified)  # not a verified entry
    call_command("pair_entries")
    assert "1 paired automatically, 0 manual kept, 2 without a reported match" in capsys.readouterr().out
    assert Pairing.objects.get(verified=verified).reported == reported
    assert not Pairing.objects.filter(pk=stale.pk).exists()
    assert not Pairing.objects.filter(verified=lonely).exists()


def test_the_row_shows_verified_and_reported_values_and_the_gap(method, client):
    reported = reported_entry(method)
    verified = verified_entry(method)
    pairing.pair_entry(verified)
    cell = row_of(verified.pk).cells["fast_1"]
    assert (cell.verified_value, cell.reported_value) == (30.0, 50.0)
    assert cell.difference == pytest.approx(-20.0)
    assert cell.paired
    assert row_of(reported.pk).cells["fast_1"].value == 50.0  # the reported row stays as it was
    data = client.get("/api/levels/2/leaderboard").json()
    row = next(r for r in data["rows"] if r["entry_id"] == verified.pk)
    assert row["paired_with"]["entry_id"] == reported.pk
    assert row["scores"]["fast_1"]["reported"]["entry_id"] == reported.pk
    assert row["scores"]["fast_1"]["difference"] == pytest.approx(-20.0)
    html = client.get("/levels/2/").content.decode()
    assert "paired with reported" in html
    assert "rep 50" in html


def test_the_entry_page_shows_both_values_the_gap_and_how_it_was_paired(method, client):
    reported = reported_entry(method)
    verified = verified_entry(method)
    pairing.pair_entry(verified)
    page = client.get(verified.get_absolute_url()).content.decode()
    assert "paired automatically" in page
    assert '<td class="num">30</td><td class="num">50</td><td class="num diff">-20</td>' in page
    assert reverse("leaderboard:compare") in page
    reported_page = client.get(reported.get_absolute_url()).content.decode()
    assert "Verified by:" in reported_page
    assert verified.get_absolute_url() in reported_page


def test_staff_repair_in_the_admin_becomes_manual(method, admin_client):
    reported = reported_entry(method)
    verified = verified_entry(method)
    found = pairing.pair_entry(verified)
    url = reverse("admin:leaderboard_pairing_change", args=[found.pk])
    response = admin_client.post(url, {"verified": verified.pk, "reported": ""})
    assert response.status_code == 302
    found.refresh_from_db()
    assert (found.reported, found.mode) == (None, Pairing.Mode.MANUAL)
    changelist = reverse("admin:leaderboard_pairing_changelist")
    admin_client.post(changelist, {"action": "pair_automatically", "_selected_action": [found.pk]})
    found.refresh_from_db()
    assert (found.reported, found.mode) == (reported, Pairing.Mode.AUTO)
    admin_client.post(changelist, {"action": "unpair", "_selected_action": [found.pk]})
    found.refresh_from_db()
    assert (found.reported, found.mode) == (None, Pairing.Mode.MANUAL)
