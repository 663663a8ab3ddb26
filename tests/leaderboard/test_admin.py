"""Admin curation: every model browsable, curation actions, and the history of reported scores."""

import pytest
from django.contrib import admin
from django.urls import reverse

from leaderboard.models import Score

pytestmark = pytest.mark.usefixtures("seeded")


@pytest.fixture
def admin_client(client, django_user_model):
    user = django_user_model.objects.create_superuser("curator", "curator@example.org", "pw-for-tests-only")
    client.force_login(user)
    return client


def admin_url(model, view, *args):
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


@pytest.mark.parametrize("model", list(admin.site._registry), ids=lambda m: m.__name__)
def test_every_model_lists_searches_and_opens(admin_client, model):
    assert admin_client.get(admin_url(model, "changelist")).status_code == 200
    if admin.site._registry[model].search_fields:
        assert admin_client.get(admin_url(model, "changelist"), {"q": "kernel"}).status_code == 200
    instance = model._default_manager.first() if model._meta.managed else None
    if instance is not None:
        assert admin_client.get(admin_url(model, "change", instance.pk)).status_code == 200


def test_entry_page_shows_its_scores_inline(admin_client):
    score = Score.objects.get(entry__label="daVinci-kernel-14B", metric_id="fast_1")
    page = admin_client.get(admin_url(type(score.entry), "change", score.entry_id)).content.decode()
    assert 'value="70.6"' in page


def run_action(client, action, scores, **extra):
    data = {"action": action, "_selected_action": [s.pk for s in scores], **extra}
    return client.post(admin_url(Score, "changelist"), data)


def test_mark_hacked_needs_a_reason(admin_client):
    scores = list(Score.objects.filter(entry__label="KernelPro"))
    confirm = run_action(admin_client, "mark_hacked", scores)
    assert confirm.status_code == 200
    assert b"a reason is required" in confirm.content
    refused = run_action(admin_client, "mark_hacked", scores, apply="Apply", reason="  ")
    assert b"This field is required" in refused.content
    assert {s.state for s in Score.objects.filter(entry__label="KernelPro")} == {"visible"}
    done = run_action(admin_client, "mark_hacked", scores, apply="Apply", reason="timing on a side stream")
    assert done.status_code == 302
    hacked = Score.objects.get(pk=scores[0].pk)
    assert (hacked.state, hacked.state_reason) == ("hacked", "timing on a side stream")
    assert hacked.history.first().history_user.username == "curator"


@pytest.mark.parametrize(("action", "state"), [("mark_flagged", "flagged"), ("mark_hidden", "hidden")])
def test_flag_hide_and_restore(admin_client, action, state):
    scores = list(Score.objects.filter(entry__label="GPT-5*"))
    run_action(admin_client, action, scores, apply="Apply", reason="")
    assert {s.state for s in Score.objects.filter(entry__label="GPT-5*")} == {state}
    run_action(admin_client, "mark_visible", scores, apply="Apply", reason="")
    assert {s.state for s in Score.objects.filter(entry__label="GPT-5*")} == {"visible"}
    assert Score.objects.filter(entry__label="GPT-5*").count() == len(scores)


def test_scores_cannot_be_deleted(admin_client):
    score = Score.objects.first()
    assert admin_client.get(admin_url(Score, "delete", score.pk)).status_code == 403


def test_hacked_without_reason_is_refused_on_the_change_form(admin_client):
    score = Score.objects.get(entry__label="daVinci-kernel-14B", metric_id="fast_1")
    form = change_form_data(admin_client, score, state="hacked", state_reason="")
    response = admin_client.post(admin_url(Score, "change", score.pk), form)
    assert b"Marking a score as hacked needs a reason." in response.content


def change_form_data(client, score, **changes):
    response = client.get(admin_url(Score, "change", score.pk))
    form = response.context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data = {name: ("" if value is None else value) for name, value in data.items()}
    return {**data, **changes}


def test_history_of_a_reported_score_shows_who_when_and_old_to_new(admin_client):
    score = Score.objects.get(entry__label="daVinci-kernel-14B", metric_id="fast_1")
    response = admin_client.post(
        admin_url(Score, "change", score.pk), change_form_data(admin_client, score, value="70.9")
    )
    assert response.status_code == 302
    history = admin_client.get(admin_url(Score, "history", score.pk)).content.decode()
    assert "curator" in history
    assert "70.6" in history
    assert "70.9" in history
    latest = Score.objects.get(pk=score.pk).history.first()
    delta = latest.diff_against(latest.prev_record)
    assert [(c.field, c.old, c.new) for c in delta.changes] == [("value", 70.6, 70.9)]
