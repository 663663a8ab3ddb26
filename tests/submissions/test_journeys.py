"""Accounts (sign-up on and off, log-out by POST, password change, the account page), kernel errors by the
first line of their real error, queue health on the submit page and the no-worker warning of the API."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rq import Queue, Worker

from leaderboard.models import Submission, TaskResult
from leaderboard.submissions import execution
from leaderboard.submissions.public import first_error_line
from leaderboard.submissions.tokens import issue_token
from tests.leaderboard.factories import make_board
from tests.submissions.samples import TORCH_RELU_KERNEL, kernel_name, zip_bytes

pytestmark = pytest.mark.django_db

HOST = "/srv/leaderboard-secret/evaluator/child/candidate.py"
SYNTAX_ERROR = (
    "Traceback (most recent call last):\n"
    f'  File "{HOST}", line 40, in load\n'
    "    exec(code, namespace)\n"
    '  File "/home/svc-eval/work/run-7/kernel.py", line 12\n'
    "    def forward(self, x:\n"
    "                       ^\n"
    "SyntaxError: '(' was never closed\n"
)
IMPORT_ERROR = (
    "Traceback (most recent call last):\n"
    '  File "/home/svc-eval/work/run-7/kernel.py", line 3, in <module>\n'
    "    import triton_nightly\n"
    "ModuleNotFoundError: No module named 'triton_nightly'\n"
)
CUDA_ERROR = (
    "Traceback (most recent call last):\n"
    '  File "/home/svc-eval/work/run-7/kernel.py", line 30, in forward\n'
    "    return out.sum()\n"
    "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call.\n"
)


@pytest.mark.parametrize(
    ("message", "first"),
    [
        (SYNTAX_ERROR, "SyntaxError: '(' was never closed (kernel.py, line 12)"),
        (IMPORT_ERROR, "ModuleNotFoundError: No module named 'triton_nightly' (kernel.py, line 3)"),
        (CUDA_ERROR, "torch.AcceleratorError: CUDA error: an illegal memory access was encountered "
                     "(kernel.py, line 30)"),
        ("SyntaxError: invalid syntax (kernel line 3)\n" + SYNTAX_ERROR,
         "SyntaxError: invalid syntax (kernel line 3)"),
        ("", ""),
    ],
)  # fmt: skip
def test_the_first_line_of_a_kernel_error_is_the_real_error_with_its_line(message, first):
    assert first_error_line(message) == first


@pytest.fixture
def failed_kernel():
    board = make_board()
    result = TaskResult.objects.filter(run=board.run, kernel__sample=0).first()
    TaskResult.objects.filter(run=board.run).update(compiled=False, correct=False, error_kind="compile_error")
    TaskResult.objects.filter(pk=result.pk).update(error_message=SYNTAX_ERROR)
    return board.run, result


def test_a_run_where_nothing_compiled_names_the_real_first_error(failed_kernel):
    run, result = failed_kernel
    TaskResult.objects.filter(run=run).update(error_message=SYNTAX_ERROR)
    status, reason = execution.judge(run)
    assert status == "failed"
    assert "first error: SyntaxError: '(' was never closed (kernel.py, line 12)" in reason
    assert "Traceback" not in reason
    assert "/srv/" not in reason


def test_pages_show_the_error_line_to_everyone_and_the_log_to_the_owner(failed_kernel):
    run, result = failed_kernel
    public = Client().get(f"/runs/{run.pk}/").content.decode()
    assert "SyntaxError: &#x27;(&#x27; was never closed (kernel.py, line 12)" in public
    assert "/srv/" not in public
    assert "/home/" not in public
    assert "Traceback" not in public
    assert Client().get(f"/results/{result.pk}/log/").status_code == 403
    owner = Client()
    owner.force_login(Submission.objects.get(pk=run.submission_id).user)
    assert HOST in owner.get(f"/results/{result.pk}/log/").content.decode()


def test_sign_up_logs_in_and_leads_to_the_account_page(client, settings):
    settings.LEADERBOARD_SIGNUP = True
    assert 'data-testid="signup-link"' in client.get("/").content.decode()
    password = "a-long-password-for-bob-7"
    response = client.post(
        "/accounts/signup/", {"username": "bob", "password1": password, "password2": password}
    )
    assert response.status_code == 302
    assert response["Location"] == "/account/"
    account = client.get("/account/").content.decode()
    assert "Signed in as <strong>bob</strong>" in account
    assert "My submissions" in account
    assert "API tokens" in account
    assert "/accounts/password_change/" in account


def test_sign_up_refuses_mismatched_passwords(client, settings):
    settings.LEADERBOARD_SIGNUP = True
    response = client.post("/accounts/signup/", {"username": "eve", "password1": "x-1", "password2": "y-2"})
    assert response.status_code == 400


def test_sign_up_can_be_switched_off(client, settings):
    settings.LEADERBOARD_SIGNUP = False
    assert client.get("/accounts/signup/").status_code == 404
    assert client.post("/accounts/signup/", {"username": "mallory"}).status_code == 404
    assert 'data-testid="signup-link"' not in client.get("/").content.decode()


def test_log_out_is_a_post_and_the_password_can_be_changed(client, user):
    client.force_login(user)
    assert client.get("/accounts/password_change/").status_code == 200
    changed = client.post(
        "/accounts/password_change/",
        {"old_password": "a-long-password-1", "new_password1": "another-pass-42x",
         "new_password2": "another-pass-42x"},
    )  # fmt: skip
    assert changed.status_code == 302
    assert 'data-testid="logout"' in client.get("/account/").content.decode()
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/account/").status_code == 302  # logged out: to the login page


def test_the_account_page_lists_my_submissions_with_their_states_and_tokens(
    client, user, tasks_l1, redis_conn
):
    token = issue_token(user, name="laptop")[1]
    bundle = SimpleUploadedFile("run.zip", zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}))
    data = {"method": "MineLLM", "hardware": "CPU", "bundle": bundle}
    created = client.post("/api/submissions", data, HTTP_AUTHORIZATION=f"Bearer {token}").json()
    client.force_login(user)
    page = client.get("/account/").content.decode()
    assert f'href="/submissions/{created["id"]}/"' in page
    assert "Queued" in page
    assert "laptop" in page


def api_post(client, user):
    token = issue_token(user)[1]
    bundle = SimpleUploadedFile("run.zip", zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}))
    data = {"method": "QueueLLM", "hardware": "CPU", "bundle": bundle}
    return client.post("/api/submissions", data, HTTP_AUTHORIZATION=f"Bearer {token}")


def test_a_submission_for_a_queue_without_workers_is_warned_at_once(client, user, tasks_l1, redis_conn):
    response = api_post(client, user)
    assert response.status_code == 201
    warning = response.json()["warning"]
    assert "No worker is serving the cpu queue" in warning
    client.force_login(user)
    page = client.get(f"/submissions/{response.json()['id']}/").content.decode()
    assert 'data-testid="queue-warning"' in page


def test_with_a_live_worker_there_is_no_warning_and_the_submit_page_counts_it(
    client, user, tasks_l1, redis_conn
):
    worker = Worker([Queue("cpu", connection=redis_conn)], connection=redis_conn, name="journeys-test")
    worker.register_birth()
    try:
        response = api_post(client, user)
        assert response.json()["warning"] == ""
        client.force_login(user)
        page = client.get("/submit/").content.decode()
        row = page.split('data-queue="cpu"')[1].split("</tr>")[0]
        assert '<td class="num">1</td>' in row  # one live worker
        assert '<td class="num">1</td><td class="num">0</td>' in row  # one run waiting, none running
        assert 'data-queue="gpu-h100"' in page
        assert "0 · none" in page
    finally:
        worker.register_death()


def test_the_upload_form_warns_on_the_submission_page_when_no_worker_serves_the_queue(
    client, user, cpu, tasks_l1, redis_conn
):
    from tests.submissions.test_views import form_data

    client.force_login(user)
    response = client.post("/submit/", form_data(hardware=cpu.pk), follow=True)
    assert response.status_code == 200
    page = response.content.decode()
    assert 'class="message warning"' in page
    assert "No worker is serving the cpu queue (CPU) right now" in page
