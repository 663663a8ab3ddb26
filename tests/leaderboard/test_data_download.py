"""The full data download /api/data.json (streamed) and the per-method history of submissions and runs."""

import json

import pytest
from django.http import StreamingHttpResponse

from leaderboard.models import Submission
from tests.leaderboard import factories

pytestmark = pytest.mark.django_db


def download(client) -> dict:
    response = client.get("/api/data.json")
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "application/json"
    return json.loads(b"".join(response.streaming_content))


def test_the_download_has_methods_entries_scores_with_provenance_and_public_runs(client):
    board = factories.make_board()
    factories.TaskResult.objects.filter(run=board.run, correct=False).update(
        error_message='Traceback (most recent call last):\n  File "/srv/x/child.py", line 3\nValueError: bad'
    )
    data = download(client)
    assert data["format"] == 1
    methods = {m["name"]: m for m in data["methods"]}
    assert methods["Alpha-14B"]["backbone"] == "Qwen3-14B-Base"
    entries = {e["id"]: e for e in data["entries"]}
    assert entries[board.alpha.pk]["method"] == methods["Alpha-14B"]["id"]
    assert entries[board.alpha.pk]["level"] == 2
    scores = data["scores"]
    reported = next(s for s in scores if s["entry"] == board.alpha.pk and s["metric"] == "fast_1")
    assert reported["provenance"] == "reported"
    assert reported["source"]["title"] == "Dr. Kernel paper"
    assert reported["source"]["url"] == "https://arxiv.org/abs/2602.05885"
    assert reported["as_written"] == "70.6"
    verified = [s for s in scores if s.get("run") == board.run.pk]
    assert verified
    assert all(s["provenance"] == "verified" and s["harness_version"] == "1.0.0" for s in verified)
    assert not any(s["entry"] == board.hidden.pk for s in scores)  # hidden scores are left out
    [run] = [r for r in data["runs"] if r["id"] == board.run.pk]
    assert len(run["results"]) == 10  # five tasks, two samples each
    failed = next(r for r in run["results"] if not r["correct"] and r["sample"] == 0)
    assert failed["error_message"] == "ValueError: bad"  # public text: no traceback, no path
    assert all(r["kernel_url"] is None for r in run["results"])  # the kernels are not public


def test_a_hidden_run_and_its_results_are_not_in_the_download(client):
    run = factories.verified_run(factories.entry("Hidden"), factories.FIVE_FAST, state="hidden")
    assert [r["id"] for r in download(client)["runs"] if r["id"] == run.pk] == []


def test_public_kernels_are_linked_from_the_download(client):
    run = factories.verified_run(factories.entry("Open"), [(True, 2.0, 1.0)])
    Submission.objects.filter(pk=run.submission_id).update(public_kernels=True)
    [item] = [r for r in download(client)["runs"] if r["id"] == run.pk]
    assert item["public_kernels"] is True
    assert item["results"][0]["kernel_url"] == f"/public/kernels/{run.results.get().kernel_id}/"


def test_the_method_page_lists_every_submission_and_run_newest_first(client, django_user_model):
    entry = factories.entry("Historic")
    older = factories.verified_run(entry, [(True, 2.0, 1.0)], n_tasks=1)
    newer = factories.verified_run(entry, [(True, 3.0, 1.0)], n_tasks=1)
    Submission.objects.filter(pk=newer.submission_id).update(bundle_name="secret-bundle.zip")
    Submission.objects.filter(pk=older.submission_id).update(bundle_name="older-bundle.zip")
    page = client.get(entry.method.get_absolute_url()).content.decode()
    assert "Submissions and runs" in page
    assert page.index(f"run #{newer.pk}") < page.index(f"run #{older.pk}")
    assert "Fast1 100.0" in page
    assert "secret-bundle.zip" not in page  # public information only
    staff = django_user_model.objects.create_user("staff", password="x-long-password", is_staff=True)
    client.force_login(staff)
    assert "secret-bundle.zip" in client.get(entry.method.get_absolute_url()).content.decode()
