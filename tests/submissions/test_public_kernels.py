"""Public kernels: the submitter's choice at upload (form, API, CLI; private by default); public kernels of
a verified run are readable and downloadable per task by anyone, with their lines of code; the task page
names the best one; every other kernel stays its owner's and staff's."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from leaderboard.models import Submission
from leaderboard.submissions.public_kernels import best_public_kernel, lines_of_code
from leaderboard.submissions.tokens import issue_token
from tests.leaderboard import factories
from tests.submissions.samples import TORCH_RELU_KERNEL, kernel_name, zip_bytes

RELU = 9  # the built-in suite's level-1 ReLU


def api_upload(client, user, **fields):
    _, token = issue_token(user)
    bundle = SimpleUploadedFile("run.zip", zip_bytes({kernel_name(1, RELU): TORCH_RELU_KERNEL}))
    data = {"bundle": bundle, "method": "PublicLLM", "hardware": "CPU", **fields}
    return client.post("/api/submissions", data, HTTP_AUTHORIZATION=f"Bearer {token}")


def test_lines_of_code_leave_out_blank_and_comment_lines():
    assert lines_of_code("# a comment\n\nimport torch\n   # indented comment\nx = 1  # trailing\n") == 2


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_public_verified_kernel_is_readable_and_downloadable_by_anyone(
    client, user, builtin_tasks, workers
):
    response = api_upload(client, user, public="true")
    assert response.status_code == 201, response.content
    submission = Submission.objects.get(pk=response.json()["id"])
    assert submission.public_kernels
    kernel = submission.kernels.get()
    assert client.get(f"/public/kernels/{kernel.pk}/").status_code == 404  # not verified yet
    assert workers.run_burst() == 0, workers.logs()
    run = submission.current_run
    assert run.status == "completed", run.reason

    listing = client.get(f"/runs/{run.pk}/kernels/")
    assert listing.status_code == 200
    assert f'href="/public/kernels/{kernel.pk}/?raw=1"'.encode() in listing.content
    assert b'<td class="num">%d</td>' % lines_of_code(TORCH_RELU_KERNEL) in listing.content
    assert f"/runs/{run.pk}/kernels/".encode() in client.get(f"/runs/{run.pk}/").content

    page = client.get(f"/public/kernels/{kernel.pk}/")
    assert b"torch.clamp_min(x, 0.0)" in page.content
    assert f"{lines_of_code(TORCH_RELU_KERNEL)} lines of code".encode() in page.content
    download = client.get(f"/public/kernels/{kernel.pk}/?raw=1")
    assert download.content.decode() == TORCH_RELU_KERNEL
    assert download["Content-Disposition"] == f'attachment; filename="{kernel_name(1, RELU)}"'
    assert client.get(f"/kernels/{kernel.pk}/")["Location"] == f"/public/kernels/{kernel.pk}/"

    task_page = client.get(builtin_tasks[kernel.task.key].get_absolute_url())
    assert f'href="/public/kernels/{kernel.pk}/"'.encode() in task_page.content
    feed = client.get("/feed.atom").content.decode()  # the worker's verified run is in the change feed
    assert f"Verified run #{run.pk}: PublicLLM on level 1" in feed


@pytest.mark.django_db
def test_kernels_are_private_by_default_and_the_form_says_so(client, user, cpu, tasks_l1, redis_conn):
    client.force_login(user)
    form = client.get("/submit/")
    assert b"Default: private" in form.content
    bundle = SimpleUploadedFile("run.zip", zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}))
    data = {"bundle": bundle, "new_method": "FormLLM", "method_kind": "llm", "hardware": cpu.pk,
            "suite": "builtin"}  # fmt: skip
    assert client.post("/submit/", data).status_code == 302
    assert not Submission.objects.get().public_kernels
    ticked = {**data, "public": "on", "new_method": "FormLLM2"}
    ticked["bundle"] = SimpleUploadedFile("run.zip", zip_bytes({kernel_name(1, 2): TORCH_RELU_KERNEL}))
    assert client.post("/submit/", ticked).status_code == 302
    assert Submission.objects.get(entry__method__name="FormLLM2").public_kernels


@pytest.mark.django_db
@pytest.mark.parametrize(("value", "public"), [("", False), ("0", False), ("false", False), ("YES", True)])
def test_the_api_field_public_is_true_or_false(client, user, tasks_l1, redis_conn, value, public):
    bundle = SimpleUploadedFile("run.zip", zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}))
    _, token = issue_token(user)
    response = client.post(
        "/api/submissions",
        {"bundle": bundle, "method": "ApiLLM", "hardware": "CPU", "public": value},
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 201, response.content
    assert Submission.objects.get().public_kernels is public


@pytest.mark.django_db
def test_a_bad_public_value_is_refused_by_name(client, user, tasks_l1):
    bundle = SimpleUploadedFile("run.zip", zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}))
    _, token = issue_token(user)
    response = client.post(
        "/api/submissions",
        {"bundle": bundle, "method": "ApiLLM", "public": "maybe"},
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 400
    assert "'public'" in response.json()["error"]


@pytest.mark.django_db
def test_the_submit_command_takes_a_public_flag(user, tasks_l1, redis_conn, tmp_path):
    bundle = tmp_path / "run.zip"
    bundle.write_bytes(zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}))
    call_command("submit", str(bundle), "--method", "CliLLM", "--user", "alice", "--public", stdout=None)
    assert Submission.objects.get().public_kernels


def publish(run, public=True):
    Submission.objects.filter(pk=run.submission_id).update(public_kernels=public)
    return run


@pytest.mark.django_db
def test_the_best_public_kernel_is_the_fastest_correct_public_one(client):
    slow = publish(factories.verified_run(factories.entry("Slow"), [(True, 1.2, 1.0)]))
    fast_private = factories.verified_run(factories.entry("Private"), [(True, 9.0, 5.0)])
    wrong = publish(factories.verified_run(factories.entry("Wrong"), [(False, None, None)]))
    hacked = publish(factories.verified_run(factories.entry("Hacked"), [(True, 8.0, 4.0)], state="hacked"))
    best = publish(factories.verified_run(factories.entry("Best"), [(True, 3.0, 2.0)]))
    task = best.results.get().task
    found = best_public_kernel(task)
    assert found.run_id == best.pk
    assert found.lines_of_code == 0  # the fixture's kernel is one comment line
    page = client.get(f"/tasks/{task.suite}/{task.level.number}/{task.problem_id}/")
    assert f'href="/public/kernels/{found.kernel_id}/"'.encode() in page.content
    for other in (slow, wrong, hacked):  # public, though not the best (a hacked run is shown, marked)
        kernel = other.results.get().kernel
        assert client.get(f"/public/kernels/{kernel.pk}/").status_code == 200
    private_kernel = fast_private.results.get().kernel
    assert client.get(f"/public/kernels/{private_kernel.pk}/").status_code == 404
    assert client.get(f"/kernels/{private_kernel.pk}/").status_code == 403
    assert client.get(f"/runs/{fast_private.pk}/kernels/").status_code == 404
