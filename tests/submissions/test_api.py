"""The token API: authentication, upload, status, quotas, cancellation; sessions never authorise a POST."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.models import EvaluationRun, Method, Submission
from leaderboard.submissions import execution
from leaderboard.submissions.tokens import issue_token
from tests.submissions.samples import TORCH_RELU_KERNEL, kernel_name, zip_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(user):
    return issue_token(user)[1]


def bundle_file(files=None, name="run.zip"):
    return SimpleUploadedFile(name, zip_bytes(files or {kernel_name(1, 1): TORCH_RELU_KERNEL}))


def post(client, token=None, **fields):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    data = {"method": "ApiLLM", "hardware": "CPU", "bundle": bundle_file(), **fields}
    return client.post("/api/submissions", data, **headers)


def test_posting_a_bundle_returns_its_id_and_status_url(client, token, tasks_l1, redis_conn):
    response = post(client, token, mode="zero-shot", backbone="B")
    assert response.status_code == 201, response.content
    body = response.json()
    submission = Submission.objects.get(pk=body["id"])
    assert body["status_url"] == f"/api/submissions/{submission.pk}"
    assert body["submissions"][0]["level"] == 1
    status = client.get(body["status_url"]).json()
    assert {"id", "status", "done", "total", "reason", "entry"} <= set(status)
    assert (status["status"], status["done"], status["total"]) == ("queued", 0, 1)
    assert status["entry"]["method"] == "ApiLLM"
    assert status["entry"]["level"] == 1


@pytest.mark.parametrize("header", ["", "Bearer nope", "Bearer kbl_wrong", "Basic abc"])
def test_a_missing_or_wrong_token_is_refused(client, tasks_l1, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.post("/api/submissions", {"method": "X", "bundle": bundle_file()}, **extra)
    assert response.status_code == 401
    assert Submission.objects.count() == 0


def test_a_revoked_token_is_refused(client, user, tasks_l1):
    from leaderboard.submissions.tokens import revoke

    token, clear = issue_token(user)
    revoke(type(token).objects.filter(pk=token.pk))
    assert post(client, clear).status_code == 401


def test_a_logged_in_session_cannot_post_without_a_token(client, user, tasks_l1):
    client.force_login(user)
    assert post(client).status_code == 401


def test_a_rejected_bundle_lists_its_problems(client, token, tasks_l1):
    response = post(client, token, bundle=bundle_file({kernel_name(4, 4): "x = 1", "../x.py": "y = 2"}))
    assert response.status_code == 400
    problems = response.json()["problems"]
    assert any("level_4_problem_4" in p for p in problems)
    assert any("'..'" in p for p in problems)
    assert Submission.objects.count() == 0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"method": ""}, "'method'"),
        ({"hardware": "TPU"}, "unknown hardware"),
        ({"method_kind": "x"}, "method_kind"),
    ],
)
def test_bad_fields_are_refused(client, token, tasks_l1, fields, message):
    response = post(client, token, **fields)
    assert response.status_code == 400
    assert message in response.json()["error"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"method": "M" * 121}, "the field 'method': Ensure this value has at most 120 characters"),
        ({"label": "L" * 201}, "the field 'label': Ensure this value has at most 200 characters"),
        ({"backbone": "B" * 201}, "the field 'backbone': Ensure this value has at most 200"),
        ({"agent_models": "A" * 301}, "the field 'agent_models': Ensure this value has at most 300"),
        ({"data_source": "D" * 201}, "the field 'data_source': Ensure this value has at most 200"),
        ({"mode": "z" * 121}, "the field 'mode': Ensure this value has at most 120"),
        ({"hardware": "H" * 81}, "the field 'hardware': Ensure this value has at most 80"),
        ({"suite": "s" * 41}, "the field 'suite': Select a valid choice"),
    ],
)
def test_fields_longer_than_their_columns_are_refused(client, token, tasks_l1, fields, message):
    response = post(client, token, **fields)
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert (Submission.objects.count(), Method.objects.filter(name="ApiLLM").count()) == (0, 0)


def test_unknown_hardware_lists_the_choices(client, token, tasks_l1):
    error = post(client, token, hardware="TPU").json()["error"]
    assert error == "the field 'hardware': unknown hardware 'TPU'; choose one of: A100, CPU, H100, H200, L40S"


@pytest.mark.django_db(transaction=True)
def test_cancelling_while_redis_is_down_answers_and_the_worker_skips_the_run(
    client, token, tasks_l1, settings, redis_conn
):
    submission_id = post(client, token).json()["id"]
    settings.RQ_QUEUES = {
        name: {**queue, "URL": "redis://127.0.0.1:1/0"} for name, queue in settings.RQ_QUEUES.items()
    }
    response = client.post(f"/api/submissions/{submission_id}/cancel", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "cancelled"
    run = EvaluationRun.objects.get(submission_id=submission_id)
    assert run.status == EvaluationRun.Status.CANCELLED
    assert execution.execute_run(run.pk, run.rq_job_id) == "skipped"  # its job, should it still start


def test_quota_answers_429_with_retry_after(client, token, tasks_l1, settings, redis_conn):
    settings.SUBMISSION_QUOTAS = {"active": 1}
    assert post(client, token).status_code == 201
    response = post(client, token)
    assert response.status_code == 429
    assert response["Retry-After"] == "300"


def test_owner_can_cancel_through_the_api(client, token, user, django_user_model, tasks_l1, redis_conn):
    submission_id = post(client, token).json()["id"]
    _, stranger = issue_token(django_user_model.objects.create_user("mallory"))
    url = f"/api/submissions/{submission_id}/cancel"
    assert client.post(url, HTTP_AUTHORIZATION=f"Bearer {stranger}").status_code == 403
    response = client.post(url, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.json()["status"] == "cancelled"
    assert response.json()["final"] is True
    assert client.post(url, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 409


def test_unknown_submission_is_404(client, db):
    assert client.get("/api/submissions/999999").status_code == 404
