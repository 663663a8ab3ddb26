"""The change feed: /feed.atom is valid Atom of new entries, verified runs, new leaders and curation
decisions; /changes/ lists the same events, paginated."""

import xml.etree.ElementTree as ET

import pytest

from leaderboard.models import LeaderSnapshot
from tests.leaderboard import factories

pytestmark = pytest.mark.django_db
ATOM = "{http://www.w3.org/2005/Atom}"


def feed_entries(client) -> list[dict]:
    response = client.get("/feed.atom")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/atom+xml")
    root = ET.fromstring(response.content)
    assert root.tag == f"{ATOM}feed"
    for required in ("id", "title", "updated", "link"):
        assert root.find(f"{ATOM}{required}") is not None, required
    found = []
    for item in root.findall(f"{ATOM}entry"):
        fields = {name: item.findtext(f"{ATOM}{name}") for name in ("id", "title", "updated", "summary")}
        fields["link"] = item.find(f"{ATOM}link").get("href")
        fields["category"] = item.find(f"{ATOM}category").get("term")
        assert fields["id"]
        assert fields["updated"]
        assert fields["title"]
        found.append(fields)
    assert len({item["id"] for item in found}) == len(found)
    return found


def test_the_feed_lists_new_entries_and_verified_runs(client):
    entry = factories.entry("Feed-Method")
    run = factories.verified_run(entry, factories.FIVE_FAST, n_tasks=10)
    items = feed_entries(client)
    kinds = {item["category"]: item for item in items}
    assert kinds["entry"]["title"] == "New entry: Feed-Method on level 2"
    assert kinds["entry"]["link"].endswith(entry.get_absolute_url())
    assert kinds["run"]["title"] == f"Verified run #{run.pk}: Feed-Method on level 2"
    assert "Fast1 30" in kinds["run"]["summary"]  # 3 of 10 tasks correct and faster than eager


def test_a_hidden_run_is_not_in_the_feed(client):
    entry = factories.entry("Hidden-Run")
    factories.verified_run(entry, factories.FIVE_FAST, state="hidden")
    assert [item["category"] for item in feed_entries(client)] == ["entry"]


def test_a_new_leader_is_recorded_when_its_score_commits(client, django_capture_on_commit_callbacks):
    first, second = factories.entry("First-Leader"), factories.entry("Second-Leader")
    with django_capture_on_commit_callbacks(execute=True):
        factories.reported(first, "fast_1", 40.0)
    with django_capture_on_commit_callbacks(execute=True):
        factories.reported(second, "fast_1", 30.0)  # not the leader: nothing new for fast1
    fast1 = LeaderSnapshot.objects.filter(view="fast1")
    assert [(s.entry_id, s.previous_entry_id) for s in fast1] == [(first.pk, None)]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        factories.reported(second, "fast_1_2", 10.0)
        second.scores.filter(metric_id="fast_1").update(value=45.0)
        factories.reported(second, "fast_2", 5.0)
    assert len(callbacks) == 1  # once per level and transaction
    newest = LeaderSnapshot.objects.filter(view="fast1").first()
    assert (newest.entry_id, newest.previous_entry_id, newest.value) == (second.pk, first.pk, 45.0)
    titles = [item["title"] for item in feed_entries(client) if item["category"] == "leader"]
    assert "New #1 on level 2 (fast1): Second-Leader" in titles
    assert "New #1 on level 2 (fast1): First-Leader" in titles


def test_a_curation_decision_appears_with_its_reason(client):
    entry = factories.entry("Curated")
    score = factories.reported(entry, "fast_1", 90.0)
    score.state, score.state_reason = "hacked", "reads the reference output"
    score.save()
    score.notes = "an edit that is no curation decision"
    score.save()
    curation = [item for item in feed_entries(client) if item["category"] == "curation"]
    assert len(curation) == 1
    assert curation[0]["title"] == "Score fast_1 of Curated visible → hacked"
    assert curation[0]["summary"] == "Marked hacked: reads the reference output"


def test_the_changes_page_lists_the_same_events_paginated(client):
    for number in range(55):
        factories.entry(f"Many {number}")
    first = client.get("/changes/")
    assert first.status_code == 200
    assert first.content.count(b'class="change change-entry"') == 50
    assert b"Many 54" in first.content
    assert b'rel="next"' in first.content
    second = client.get("/changes/?page=2")
    assert second.content.count(b'class="change change-entry"') == 5
    assert b"New entry: Many 0 on" in second.content


def test_the_changes_page_reads_a_fixed_number_of_queries(client, django_assert_max_num_queries):
    for number in range(8):
        factories.verified_run(factories.entry(f"Run {number}"), [(True, 2.0, 1.0)])
    with django_assert_max_num_queries(8):
        page = client.get("/changes/")
    assert page.content.count(b'class="change change-run"') == 8
