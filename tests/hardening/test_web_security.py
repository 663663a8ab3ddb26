"""Web security: CSRF on every form, who may see and do what, API tokens, XSS through everything a user
can name, rate limits, the production checks and the security headers."""

import datetime
import json
import os
import re
import secrets
import subprocess
import sys

import pytest
from django.apps import apps
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import models
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from leaderboard.models import ApiToken, Provenance, Score, Submission, WindowedCounter
from leaderboard.security import login_throttle
from leaderboard.security.headers import CONTENT_SECURITY_POLICY
from leaderboard.submissions import api, verified
from leaderboard.submissions.ingest import store_result
from leaderboard.submissions.intake import EntryDetails, submit_bundle
from leaderboard.submissions.tokens import issue_token
from tests.hardening.harness import ROOT
from tests.leaderboard import factories
from tests.submissions.samples import TORCH_RELU_KERNEL, kernel_name, leaderboard_json, result_file, zip_bytes

pytestmark = pytest.mark.django_db

PAYLOAD = "<script>alert('kb-xss')</script><img src=x onerror=alert(1)>\"' onmouseover=\"alert(2)"
RAW_MARKUP = ("<script>alert('kb-xss')", "<img src=x onerror", 'onmouseover="alert(2)')
ESCAPED_MARKUP = "&lt;script&gt;alert("
CSRF_EXEMPT = {api.submissions, api.cancel_submission}  # the token API: it never accepts a session


def url_callbacks(patterns=None):
    """Every view the URL configuration can reach."""
    for pattern in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(pattern, URLResolver):
            yield from url_callbacks(pattern.url_patterns)
        elif isinstance(pattern, URLPattern):
            yield pattern.callback


# --- CSRF ---------------------------------------------------------------------------------------------


def test_only_the_token_api_is_exempt_from_csrf():
    exempt = {view for view in url_callbacks() if getattr(view, "csrf_exempt", False)}
    assert exempt == CSRF_EXEMPT


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("owner", password="owner-password-1")


@pytest.fixture
def submitted(make_tasks, owner, cpu, redis_conn):
    make_tasks((1, 1))
    data = zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL})
    return submit_bundle(owner, data, "one.zip", EntryDetails(method_name="Csrf", hardware=cpu))[0]


def forms_of(html: str) -> list[tuple[str, bool]]:
    """(action, holds a CSRF token) of every POST form of a page."""
    found = []
    for match in re.finditer(r"<form\b[^>]*>.*?</form>", html, re.S | re.I):
        form = match.group(0)
        if not re.search(r'method="post"', form, re.I):
            continue
        action = re.search(r'action="([^"]*)"', form)
        found.append((action.group(1) if action else "", "csrfmiddlewaretoken" in form))
    return found


def test_every_form_of_every_page_carries_a_token_and_refuses_a_post_without_one(owner, submitted):
    token = ApiToken.objects.create(user=owner, prefix="kbl_x", token_hash="0" * 64)
    checked = Client(enforce_csrf_checks=True)
    checked.force_login(owner)
    pages = ["/submit/", "/submissions/", f"/submissions/{submitted.pk}/", "/accounts/login/"]
    actions = set()
    for page in pages:
        response = checked.get(page)
        assert response.status_code == 200, page
        for action, has_token in forms_of(response.content.decode()):
            assert has_token, (page, action)
            actions.add(action or page)
    assert {"/submissions/tokens/", f"/submissions/tokens/{token.pk}/revoke/"} <= actions
    assert f"/submissions/{submitted.pk}/cancel/" in actions
    for action in sorted(actions):
        assert checked.post(action, {}).status_code == 403, action  # no token: refused by the middleware
    assert Submission.objects.get(pk=submitted.pk).status != "cancelled"


def test_admin_forms_refuse_a_post_without_a_token(django_user_model, submitted):
    admin = django_user_model.objects.create_superuser("root", password="root-password-1")
    checked = Client(enforce_csrf_checks=True)
    checked.force_login(admin)
    method = submitted.entry.method
    for url in (f"/admin/leaderboard/method/{method.pk}/change/", "/admin/leaderboard/score/", "/admin/rq/"):
        assert checked.post(url, {"name": "renamed"}).status_code == 403, url
    method.refresh_from_db()
    assert method.name == "Csrf"


# --- who may see and do what ------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/submit/", "/submissions/", "/admin/", "/admin/rq/"])
def test_anonymous_visitors_are_sent_to_log_in(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert "login" in response["Location"]


def test_anonymous_posts_change_nothing(client, submitted):
    assert client.post("/submit/", {}).status_code == 302
    assert client.post("/submissions/tokens/", {}).status_code == 302
    assert client.post(f"/submissions/{submitted.pk}/cancel/").status_code == 302
    assert ApiToken.objects.count() == 0
    assert Submission.objects.get(pk=submitted.pk).status == "queued"


def test_a_user_who_is_not_staff_gets_no_admin(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("plain", password="plain-password-1"))
    for url in ("/admin/", "/admin/leaderboard/score/", "/admin/rq/"):
        response = client.get(url)
        assert response.status_code == 302, url
        assert "login" in response["Location"], url


def test_another_users_kernels_logs_tokens_and_submissions_are_out_of_reach(
    client, django_user_model, submitted
):
    owner_token = issue_token(submitted.user)[0]
    kernel = submitted.kernels.get()
    result = store_result(submitted.current_run, kernel, result_file("torch_relu_correct"))
    intruder = django_user_model.objects.create_user("intruder", password="intruder-password-1")
    client.force_login(intruder)
    assert client.get(f"/kernels/{kernel.pk}/").status_code == 403
    assert client.get(f"/kernels/{kernel.pk}/?raw=1").status_code == 403
    assert client.get(f"/results/{result.pk}/log/").status_code == 403
    assert client.post(f"/submissions/{submitted.pk}/cancel/").status_code == 403
    client.post(f"/submissions/tokens/{owner_token.pk}/revoke/")
    assert ApiToken.objects.get(pk=owner_token.pk).revoked_at is None
    _, intruder_token = issue_token(intruder)
    response = client.post(
        f"/api/submissions/{submitted.pk}/cancel", HTTP_AUTHORIZATION=f"Bearer {intruder_token}"
    )
    assert response.status_code == 403
    assert Submission.objects.get(pk=submitted.pk).status == "queued"


def test_staff_see_sources_and_logs(client, django_user_model, submitted):
    kernel = submitted.kernels.get()
    client.force_login(
        django_user_model.objects.create_user("staff", password="staff-password-1", is_staff=True)
    )
    assert client.get(f"/kernels/{kernel.pk}/").status_code == 200


# --- API tokens -----------------------------------------------------------------------------------------


def text_columns():
    for model in apps.get_models():
        for field in model._meta.get_fields():
            if isinstance(field, models.CharField | models.TextField) and not field.is_relation:
                yield model, field.name


def test_an_api_token_is_stored_only_as_its_hash_and_shown_once(client, owner):
    client.force_login(owner)
    created = client.post("/submissions/tokens/", {"name": "laptop"}).content.decode()
    clear = re.search(r"kbl_[A-Za-z0-9_-]{40,}", created).group(0)
    for model, name in text_columns():
        assert not model.objects.filter(**{f"{name}__contains": clear[4:]}).exists(), (model, name)
    token = ApiToken.objects.get(user=owner)
    assert len(token.token_hash) == 64
    assert clear[: len(token.prefix)] == token.prefix
    assert clear not in client.get("/submissions/").content.decode()  # shown once, never again


def test_a_revoked_token_stops_working_at_once(client, owner, make_tasks):
    make_tasks((1, 1))
    row, clear = issue_token(owner)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {clear}"}
    assert client.post("/api/submissions", {}, **headers).status_code == 400  # authenticated, no bundle
    assert ApiToken.objects.get(pk=row.pk).last_used is not None
    client.force_login(owner)
    client.post(f"/submissions/tokens/{row.pk}/revoke/")
    client.logout()
    assert client.post("/api/submissions", {}, **headers).status_code == 401
    owner.is_active = False
    owner.save()
    _, other = issue_token(owner)
    assert client.post("/api/submissions", {}, HTTP_AUTHORIZATION=f"Bearer {other}").status_code == 401


def test_a_session_never_authorises_the_token_api(client, owner, submitted):
    client.force_login(submitted.user)
    assert client.post("/api/submissions", {}).status_code == 401
    assert client.post(f"/api/submissions/{submitted.pk}/cancel").status_code == 401


# --- XSS ------------------------------------------------------------------------------------------------


@pytest.fixture
def hostile_board(make_tasks, cpu, django_user_model, redis_conn):
    """Every text a user or a source can set, carrying markup: a method, its entry, a reported score, a
    submission (its metadata, kernel source, result log and error) with verified scores."""
    make_tasks((1, 1), (1, 2))
    owner = django_user_model.objects.create_user("xss-owner", password="xss-password-1")
    details = EntryDetails(
        method_name=f"Method {PAYLOAD}",
        hardware=cpu,
        backbone=PAYLOAD,
        agent_models=PAYLOAD,
        label=f"Label {PAYLOAD}",
        data_source=PAYLOAD,
        mode=PAYLOAD,
        notes=PAYLOAD,
    )
    bundle = leaderboard_json(
        {"level_1_problem_1_sample_0": f"# {PAYLOAD}\n{TORCH_RELU_KERNEL}"}, {"display_name": PAYLOAD}
    )
    submission = submit_bundle(owner, bundle, f"{PAYLOAD}.json", details)[0]
    run = submission.current_run
    kernel = submission.kernels.get()
    hostile = result_file("torch_relu_correct")
    hostile["log"] = PAYLOAD
    hostile["flags"] = [{"code": "excessive_speedup", "severity": "suspect", "detail": PAYLOAD}]
    result = store_result(run, kernel, hostile)
    run.status = "running"
    run.environment = {"gpu": {"name": PAYLOAD}, "sandbox": {"absent": {"user": PAYLOAD}}}
    run.save()
    verified.write_scores(run)
    entry = submission.entry
    paper = factories.source(f"Paper {PAYLOAD}")
    factories.reported(entry, "fast_1", 12.0, paper, state="flagged", state_reason=PAYLOAD)
    return {"owner": owner, "submission": submission, "run": run, "kernel": kernel, "result": result}


def pages_of(board) -> list[str]:
    submission, entry = board["submission"], board["submission"].entry
    return [
        "/",
        "/levels/1/",
        "/levels/1/?view=fastp&p=1.0",
        "/levels/1/?view=geomean&lane=all",  # its verified scores are of the separate lane (a CPU run)
        "/levels/1/?lane=separate",
        f"/methods/{entry.method.slug}/",
        f"/entries/{entry.pk}/",
        f"/submissions/{submission.pk}/",
        f"/submissions/{submission.pk}/tasks/",
        f"/runs/{board['run'].pk}/",
        f"/kernels/{board['kernel'].pk}/",
        f"/results/{board['result'].pk}/log/",
        "/admin/leaderboard/method/",
        "/admin/leaderboard/score/",
        f"/admin/leaderboard/submission/{submission.pk}/change/",
    ]


def test_markup_in_every_user_text_renders_inert(client, django_user_model, hostile_board):
    assert Score.objects.filter(entry=hostile_board["submission"].entry, provenance=Provenance.VERIFIED)
    staff = django_user_model.objects.create_user("xss-staff", password="staff-password-1", is_staff=True)
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    for url in pages_of(hostile_board):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        for raw in RAW_MARKUP:
            assert raw not in html, (url, raw)
        assert ESCAPED_MARKUP in html or "&lt;script&gt;" in html, url  # the text was shown, escaped
    client.force_login(hostile_board["owner"])
    mine = client.get("/submissions/").content.decode()
    assert ESCAPED_MARKUP in mine
    assert not any(raw in mine for raw in RAW_MARKUP)


def test_raw_sources_and_json_answers_are_never_html(client, hostile_board):
    client.force_login(hostile_board["owner"])
    raw = client.get(f"/kernels/{hostile_board['kernel'].pk}/?raw=1")
    assert raw["Content-Type"].startswith("text/plain")
    assert raw["X-Content-Type-Options"] == "nosniff"
    submission = hostile_board["submission"]
    for url in (
        f"/api/submissions/{submission.pk}",
        "/api/levels/1/leaderboard",
        f"/api/entries/{submission.entry.pk}",
    ):
        response = client.get(url)
        assert response["Content-Type"] == "application/json", url
        json.loads(response.content)


# --- rate limits ----------------------------------------------------------------------------------------


def test_submissions_over_the_rate_limit_get_429_with_retry_after(
    client, owner, make_tasks, settings, redis_conn
):
    make_tasks((1, 1))
    settings.SUBMISSION_QUOTAS = {"per_minute": 2, "active": 10, "per_day": 10}
    _, clear = issue_token(owner)
    statuses = []
    for number in range(3):
        bundle = zip_bytes({kernel_name(1, 1): f"{TORCH_RELU_KERNEL}# {number}\n"})
        fields = {"bundle": SimpleUploadedFile("b.zip", bundle), "method": "Rate", "hardware": "CPU"}
        response = client.post("/api/submissions", fields, HTTP_AUTHORIZATION=f"Bearer {clear}")
        statuses.append(response.status_code)
    assert statuses == [201, 201, 429]
    assert response["Retry-After"] == "60"
    assert Submission.objects.count() == 2


def test_logins_are_refused_after_ten_failures_even_with_the_right_password(client, owner):
    for _ in range(10):
        client.post("/accounts/login/", {"username": "owner", "password": "wrong"})
    response = client.post("/accounts/login/", {"username": "owner", "password": "owner-password-1"})
    assert response.status_code == 200  # the form again: not logged in
    assert "_auth_user_id" not in client.session
    cache.clear()  # the counts are not in the process's cache ...
    client.post("/accounts/login/", {"username": "owner", "password": "owner-password-1"})
    assert "_auth_user_id" not in client.session
    passed = timezone.now() - datetime.timedelta(seconds=login_throttle.WINDOW_S + 1)
    WindowedCounter.objects.update(window_started=passed)  # ... and this is the window having passed
    response = client.post("/accounts/login/", {"username": "owner", "password": "owner-password-1"})
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(owner.pk)


def test_the_login_throttle_counts_addresses_too(owner, django_user_model):
    django_user_model.objects.create_user("second", password="second-password-1")
    guesser = Client(REMOTE_ADDR="203.0.113.9")
    for number in range(10):
        guesser.post("/accounts/login/", {"username": f"guess-{number}", "password": "wrong"})
    guesser.post("/accounts/login/", {"username": "second", "password": "second-password-1"})
    assert "_auth_user_id" not in guesser.session
    elsewhere = Client(REMOTE_ADDR="198.51.100.7")
    elsewhere.post("/accounts/login/", {"username": "second", "password": "second-password-1"})
    assert "_auth_user_id" in elsewhere.session


def test_a_failure_after_the_window_starts_a_new_count_and_old_windows_are_forgotten(client, owner):
    for _ in range(3):
        client.post("/accounts/login/", {"username": "Owner", "password": "wrong"})
    counts = dict(WindowedCounter.objects.values_list("key", "count"))
    assert counts == {"user:owner": 3, "address:127.0.0.1": 3}
    passed = timezone.now() - datetime.timedelta(seconds=login_throttle.WINDOW_S + 1)
    WindowedCounter.objects.filter(key="user:owner").update(window_started=passed)
    WindowedCounter.objects.create(key="user:someone-else", count=9, window_started=passed)
    client.post("/accounts/login/", {"username": "owner", "password": "wrong"})
    counts = dict(WindowedCounter.objects.values_list("key", "count"))
    assert counts == {"user:owner": 1, "address:127.0.0.1": 4}


# --- production settings and headers ----------------------------------------------------------------------


def production_env(tmp_path, **extra) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("DEBUG", "SECRET_KEY")}
    env.update(
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="leaderboard.example.org",
        CSRF_TRUSTED_ORIGINS="https://leaderboard.example.org",
        LEADERBOARD_VAR_DIR=str(tmp_path),
        DJANGO_SETTINGS_MODULE="leaderboard.settings",
    )
    env.update(extra)
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "manage.py", *args]
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.slow
def test_check_deploy_is_clean_with_production_settings(tmp_path):
    completed = manage(production_env(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "no issues" in completed.stdout


@pytest.mark.slow
def test_check_deploy_fails_on_a_weak_key_and_production_refuses_no_key(tmp_path):
    weak = manage(
        production_env(tmp_path, SECRET_KEY="short"), "check", "--deploy", "--fail-level", "WARNING"
    )
    assert weak.returncode != 0
    assert "security.W009" in weak.stdout + weak.stderr
    missing = production_env(tmp_path)
    del missing["SECRET_KEY"]
    refused = manage(missing, "check")
    assert refused.returncode != 0
    assert "SECRET_KEY must be set" in refused.stderr


PRODUCTION_REQUEST = """
import json, django
django.setup()
from django.test import Client
client = Client(HTTP_HOST="leaderboard.example.org")
plain = client.get("/accounts/login/")
secure = client.get("/accounts/login/", secure=True)
cookies = {name: dict(morsel) for name, morsel in secure.cookies.items()}
print(json.dumps({"plain": [plain.status_code, plain.get("Location", "")],
                  "headers": dict(secure.headers), "cookies": cookies}))
"""


@pytest.mark.slow
def test_production_responses_carry_hsts_secure_cookies_and_the_policies(tmp_path):
    command = [sys.executable, "-c", PRODUCTION_REQUEST]
    completed = subprocess.run(
        command,
        cwd=ROOT,
        env=production_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    seen = json.loads(completed.stdout.splitlines()[-1])
    assert seen["plain"] == [301, "https://leaderboard.example.org/accounts/login/"]
    headers = seen["headers"]
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    csrf = seen["cookies"]["csrftoken"]
    assert csrf["secure"] is True
    assert csrf["samesite"] == "Lax"


def test_every_page_carries_the_security_headers(client, hostile_board):
    for url in ("/", "/levels/1/", "/api/levels", f"/submissions/{hostile_board['submission'].pk}/"):
        headers = client.get(url).headers
        assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY, url
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Referrer-Policy"] == "same-origin"
        assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
        assert "camera=()" in headers["Permissions-Policy"]


def test_no_template_runs_inline_script():
    """The policy forbids inline scripts: no template may need one (JSON data goes through json_script)."""
    for template in (ROOT / "templates").rglob("*.html"):
        text = template.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text):
            assert "src=" in tag or 'type="application/json"' in tag, (template, tag)
        assert not re.search(r"\son[a-z]+=\"", text), template
