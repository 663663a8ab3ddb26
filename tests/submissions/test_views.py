"""Pages: login-only upload with CSRF, the status page and its live table, escaped sources and logs."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from leaderboard.models import Submission, TaskResult
from leaderboard.submissions.ingest import store_result
from leaderboard.submissions.intake import EntryDetails, submit_bundle
from leaderboard.submissions.tokens import authenticate
from tests.submissions.samples import TORCH_RELU_KERNEL, kernel_name, result_file, zip_bytes

pytestmark = pytest.mark.django_db

XSS = "</script><script>alert('owned')</script>"


def test_upload_needs_login(client):
    response = client.get("/submit/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert client.get("/accounts/login/").status_code == 200


def form_data(**overrides):
    return {
        "bundle": SimpleUploadedFile("run.zip", zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL})),
        "new_method": "FormLLM",
        "method_kind": "llm",
        "hardware": "",
        "suite": "builtin",
        **overrides,
    }


def test_upload_form_needs_the_csrf_token(user, cpu, tasks_l1):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post("/submit/", form_data(hardware=cpu.pk)).status_code == 403
    assert Submission.objects.count() == 0


def test_upload_form_creates_a_submission_and_redirects_to_it(client, user, cpu, tasks_l1, redis_conn):
    client.force_login(user)
    page = client.get("/submit/")
    assert b'name="csrfmiddlewaretoken"' in page.content
    response = client.post("/submit/", form_data(hardware=cpu.pk, label="Row"))
    submission = Submission.objects.get()
    assert response.status_code == 302
    assert response["Location"] == submission.get_absolute_url()
    assert submission.entry.label == "Row"


def test_upload_form_shows_every_bundle_problem(client, user, cpu, tasks_l1):
    client.force_login(user)
    bad = SimpleUploadedFile("bad.zip", zip_bytes({kernel_name(8, 8): "x = 1", "/abs.py": "y = 1"}))
    response = client.post("/submit/", form_data(hardware=cpu.pk, bundle=bad))
    assert response.status_code == 400
    assert b"level_8_problem_8" in response.content
    assert b"absolute paths" in response.content


def test_upload_form_needs_one_method(client, user, cpu, tasks_l1):
    client.force_login(user)
    response = client.post("/submit/", form_data(hardware=cpu.pk, new_method=""))
    assert response.status_code == 400
    assert b"Choose an existing method" in response.content


@pytest.fixture
def evaluated(user, cpu, tasks_l1, redis_conn):
    """A submission whose kernel source and result log carry markup, as an attacker would write them."""
    source = TORCH_RELU_KERNEL + f"# {XSS}\n"
    [submission] = submit_bundle(
        user,
        zip_bytes({kernel_name(1, 1): source}),
        "x.zip",
        EntryDetails(method_name="XssLLM", hardware=cpu),
    )
    result = result_file("torch_relu_correct")
    result["log"] = XSS
    result["error"] = {"kind": "runtime_error", "message": XSS}
    stored = store_result(submission.current_run, submission.kernels.get(), result)
    return submission, stored


def test_sources_and_logs_are_escaped(client, user, evaluated):
    submission, result = evaluated
    client.force_login(user)
    for url in (f"/kernels/{result.kernel_id}/", f"/results/{result.pk}/log/", submission.get_absolute_url()):
        page = client.get(url)
        assert page.status_code == 200
        assert XSS.encode() not in page.content
        assert b"&lt;script&gt;alert(" in page.content
    raw = client.get(f"/kernels/{result.kernel_id}/?raw=1")
    assert raw["Content-Type"].startswith("text/plain")


def test_sources_and_logs_are_for_the_owner_and_staff(client, django_user_model, evaluated):
    submission, result = evaluated
    client.force_login(django_user_model.objects.create_user("eve"))
    assert client.get(f"/kernels/{result.kernel_id}/").status_code == 403
    assert client.get(f"/results/{result.pk}/log/").status_code == 403
    page = client.get(submission.get_absolute_url())
    assert page.status_code == 200
    assert b"/kernels/" not in page.content


def test_status_page_has_progress_and_the_task_table(client, evaluated):
    submission, result = evaluated
    page = client.get(submission.get_absolute_url())
    assert b'<progress id="progress"' in page.content
    assert b"js/submission.js" in page.content
    rows = client.get(f"/submissions/{submission.pk}/tasks/")
    assert rows.status_code == 200
    assert b"runtime_error" in rows.content
    assert TaskResult.objects.count() == 1


def test_my_page_issues_a_token_once(client, user):
    client.force_login(user)
    page = client.post("/submissions/tokens/", {"name": "laptop"})
    clear = re.search(rb"<code>(kbl_[A-Za-z0-9_-]{40,})</code>", page.content).group(1).decode()
    assert authenticate(clear) == user
    assert clear.encode() not in client.get("/submissions/").content
