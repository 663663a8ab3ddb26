"""Public texts never show a host path or a traceback; the owner and staff still read the full text."""

import pytest

from leaderboard.models import EvaluationRun, Submission, TaskResult
from leaderboard.submissions.public import MAX_PUBLIC_CHARS, public_text
from tests.leaderboard.factories import make_board

HOST_PATH = "/srv/leaderboard-secret/evaluator/child.py"
TRACEBACK = (
    "Traceback (most recent call last):\n"
    f'  File "{HOST_PATH}", line 10, in <module>\n'
    "    main()\n"
    '  File "/home/svc-eval/work/run-7/kernels/k1.py", line 3, in main\n'
    "    raise RuntimeError('boom')\n"
    "RuntimeError: boom"
)


@pytest.mark.parametrize(
    ("text", "public"),
    [
        (TRACEBACK, "RuntimeError: boom"),
        (f"first error: {HOST_PATH}:12: SyntaxError", "first error: child.py:12: SyntaxError"),
        (
            "No space left on device: '/tmp/pytest-9/work/run-3/tasks/task-1.py'",
            "No space left on device: 'task-1.py'",
        ),
        ("C:\\Users\\bob\\kernel.py failed; ~/secrets/key too", "kernel.py failed; key too"),
        ("see https://example.org/a/b, 1/2 and and/or", "see https://example.org/a/b, 1/2 and and/or"),
        (
            "ValueError: x\n\nDuring handling of the above exception, another exception occurred:\n\n"
            + TRACEBACK,
            "ValueError: x\nRuntimeError: boom",
        ),
        ("", ""),
        (None, ""),
    ],
)
def test_public_text(text, public):
    assert public_text(text) == public


def test_long_texts_are_cut():
    assert len(public_text("x" * 5000)) == MAX_PUBLIC_CHARS


@pytest.fixture
def failed_board(db):
    board = make_board()
    run = board.run
    reason = f"no kernel compiled; first error: {HOST_PATH}:12: SyntaxError"
    EvaluationRun.objects.filter(pk=run.pk).update(reason=reason)
    Submission.objects.filter(pk=run.submission_id).update(reason=TRACEBACK)
    Submission.objects.get(pk=run.submission_id).events.create(status="errored", reason=TRACEBACK)
    result = TaskResult.objects.filter(run=run).first()
    TaskResult.objects.filter(pk=result.pk).update(error_kind="compile_error", error_message=TRACEBACK)
    board.result = result
    return board


def test_no_public_page_or_answer_shows_a_host_path_or_a_traceback(client, failed_board):
    run = failed_board.run
    urls = [
        f"/submissions/{run.submission_id}/",
        f"/submissions/{run.submission_id}/tasks/",
        f"/runs/{run.pk}/",
        f"/entries/{failed_board.verified.pk}/",
        f"/api/submissions/{run.submission_id}",
    ]
    for url in urls:
        body = client.get(url).content.decode()
        assert "/srv/" not in body, url
        assert "/home/" not in body, url
        assert "Traceback" not in body, url
    assert "RuntimeError: boom" in client.get(f"/submissions/{run.submission_id}/").content.decode()
    assert "child.py:12" in client.get(f"/runs/{run.pk}/").content.decode()


def test_the_owner_reads_the_full_error_on_the_log_page(client, failed_board):
    owner = Submission.objects.get(pk=failed_board.run.submission_id).user
    client.force_login(owner)
    body = client.get(f"/results/{failed_board.result.pk}/log/").content.decode()
    assert HOST_PATH in body
    assert "Traceback (most recent call last)" in body
