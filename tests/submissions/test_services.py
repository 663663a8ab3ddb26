"""Storing a bundle: whole, in one transaction, one submission per level; nothing if rejected."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction

from evaluator import HARNESS_VERSION
from leaderboard.models import (
    Entry,
    EvaluationRun,
    Hardware,
    KernelSource,
    Method,
    Submission,
    SubmissionEvent,
    SubmissionKernel,
)
from leaderboard.submissions import states
from leaderboard.submissions.bundles import BundleError
from leaderboard.submissions.intake import EntryDetails, submit_bundle
from leaderboard.submissions.lifecycle import cancel, reverify
from leaderboard.submissions.quotas import QuotaExceeded
from leaderboard.submissions.routing import SubmissionRefused, route
from tests.submissions.samples import TORCH_RELU_KERNEL, kernel_name, leaderboard_json, zip_bytes

pytestmark = pytest.mark.django_db

Status = Submission.Status


def details(cpu, **overrides) -> EntryDetails:
    return EntryDetails(**{"method_name": "TestLLM", "hardware": cpu, "backbone": "Qwen3-8B", **overrides})


def stored_counts() -> tuple[int, ...]:
    models = (Submission, SubmissionKernel, KernelSource, Entry, EvaluationRun, Method)
    return tuple(model.objects.count() for model in models)


def test_a_bundle_is_stored_whole_with_sources_deduplicated(user, cpu, tasks_l1, redis_conn):
    data = zip_bytes(
        {
            kernel_name(1, 1): TORCH_RELU_KERNEL,
            kernel_name(1, 2): TORCH_RELU_KERNEL,  # same text: stored once
            kernel_name(1, 2, 1): TORCH_RELU_KERNEL + "# sample 1\n",
        }
    )
    [submission] = submit_bundle(user, data, "run.zip", details(cpu, label="My row", mode="zero-shot"))
    assert submission.status == Status.QUEUED
    assert submission.total == 2  # sample 0 of two tasks ranks and is evaluated
    assert submission.kernels.count() == 3
    assert KernelSource.objects.count() == 2
    entry = submission.entry
    assert (entry.method.name, entry.level.number, entry.label, entry.mode) == (
        "TestLLM",
        1,
        "My row",
        "zero-shot",
    )
    assert entry.n_tasks == 3
    assert entry.task_subset == "2 of 3 tasks (builtin suite)"
    assert entry.method.backbone == "Qwen3-8B"
    run = submission.current_run
    assert (run.device, run.queue, run.status) == ("cpu", "cpu", "queued")
    assert run.harness_version == HARNESS_VERSION
    assert [e.status for e in SubmissionEvent.objects.filter(submission=submission)] == [
        "received",
        "validated",
        "queued",
    ]


def test_a_bundle_spanning_levels_makes_one_submission_and_entry_per_level(user, cpu, make_tasks, redis_conn):
    make_tasks((1, 1), (2, 1))
    data = leaderboard_json(
        {"level_1_problem_1_sample_0": TORCH_RELU_KERNEL, "level_2_problem_1_sample_0": "x=1"}
    )
    created = submit_bundle(user, data, "board.json", details(cpu))
    assert sorted(s.entry.level.number for s in created) == [1, 2]
    assert Method.objects.filter(name="TestLLM").count() == 1
    assert {s.bundle_format for s in created} == {"leaderboard_json"}


def test_a_rejected_bundle_stores_nothing(user, cpu, tasks_l1):
    before = stored_counts()
    with pytest.raises(BundleError) as raised:
        submit_bundle(user, zip_bytes({kernel_name(5, 5): "x = 1"}), "bad.zip", details(cpu))
    assert "level_5_problem_5" in raised.value.message
    assert stored_counts() == before


def test_over_quota_stores_nothing(user, cpu, tasks_l1, settings, redis_conn):
    settings.SUBMISSION_QUOTAS = {"active": 1}
    data = zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL})
    submit_bundle(user, data, "one.zip", details(cpu))
    before = stored_counts()
    with pytest.raises(QuotaExceeded, match="at most 1 submissions may be queued or running"):
        submit_bundle(user, data, "two.zip", details(cpu))
    assert stored_counts() == before


def test_an_existing_method_is_reused_case_insensitively(user, cpu, tasks_l1, redis_conn):
    Method.objects.create(name="TestLLM", slug="testllm")
    [submission] = submit_bundle(
        user, zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}), "r.zip", details(cpu, method_name="testllm")
    )
    assert submission.entry.method.slug == "testllm"


def test_states_follow_the_transition_table(user, cpu, tasks_l1, redis_conn):
    [submission] = submit_bundle(
        user, zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}), "r.zip", details(cpu)
    )
    with pytest.raises(states.InvalidTransition):
        states.move(submission.pk, Status.COMPLETED, "skipping running")
    states.move(submission.pk, Status.RUNNING, "picked up")
    states.move(submission.pk, Status.COMPLETED, "done")
    with pytest.raises(states.InvalidTransition):
        states.move(submission.pk, Status.RUNNING, "finished work does not run again")
    assert Submission.objects.get(pk=submission.pk).reason == "done"


def test_cancel_and_reverify(user, cpu, tasks_l1, redis_conn):
    [submission] = submit_bundle(
        user, zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}), "r.zip", details(cpu)
    )
    first = submission.current_run
    cancelled = cancel(submission, "changed my mind")
    assert cancelled.status == Status.CANCELLED
    first.refresh_from_db()
    assert first.status == EvaluationRun.Status.CANCELLED
    second = reverify(cancelled, all_samples=True)
    assert second.pk != first.pk
    assert second.all_samples
    assert Submission.objects.get(pk=submission.pk).status == Status.QUEUED


@pytest.mark.django_db(transaction=True)
def test_the_job_is_enqueued_only_after_commit(user, cpu, tasks_l1, redis_conn):
    import django_rq

    queue = django_rq.get_queue("cpu")
    data = zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL})
    with transaction.atomic():
        [submission] = submit_bundle(user, data, "r.zip", details(cpu))
        assert queue.count == 0  # not before the commit
    assert queue.job_ids == [submission.current_run.rq_job_id]
    try:
        with transaction.atomic():
            submit_bundle(user, data, "rolled-back.zip", details(cpu))
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    assert queue.count == 1  # the rolled-back upload left no job


def test_submit_command_stores_locally(user, cpu, tasks_l1, tmp_path, redis_conn, capsys):
    bundle = tmp_path / "run.zip"
    bundle.write_bytes(zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}))
    call_command("submit", str(bundle), "--method", "CliLLM", "--user", "alice", "--hardware", "cpu")
    assert "(level 1): queued" in capsys.readouterr().out
    assert Submission.objects.get().entry.method.name == "CliLLM"


def test_reverify_outdated_queues_only_runs_of_another_harness(user, cpu, tasks_l1, redis_conn, capsys):
    data = zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL})
    old, current = (submit_bundle(user, data, f"{n}.zip", details(cpu))[0] for n in (1, 2))
    for submission in (old, current):
        states.move(submission.pk, Status.RUNNING, "")
        states.move(submission.pk, Status.COMPLETED, "")
        submission.runs.update(status=EvaluationRun.Status.COMPLETED)  # as finish() closes both
    EvaluationRun.objects.filter(submission=old).update(harness_version="0.9.0")
    call_command("reverify", "--outdated")
    assert "1 submission(s) queued" in capsys.readouterr().out
    assert old.runs.count() == 2
    assert current.runs.count() == 1
    assert old.current_run.harness_version == HARNESS_VERSION


def test_a_worker_refuses_unknown_queues():
    with pytest.raises(CommandError, match="unknown queues"):
        call_command("evaluation_worker", "gpu-tpu9")


def test_hardware_without_a_queue_is_refused_not_evaluated_on_the_cpu(user, cpu, tasks_l1):
    reference_gpu = Hardware.objects.create(name="RTX 4090", vendor="NVIDIA")  # reported scores only
    before = stored_counts()
    with pytest.raises(SubmissionRefused, match="RTX 4090 has no evaluation queue; choose one of: .*H200"):
        submit_bundle(
            user, zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}), "r.zip", details(reference_gpu)
        )
    assert stored_counts() == before
    cpu.queue = ""
    assert route(cpu) == ("cpu", "cpu")  # the CPU target alone falls back to the cpu queue


def test_submit_command_lists_the_hardware_choices(user, cpu, tasks_l1, tmp_path):
    Hardware.objects.create(name="RTX 4090", vendor="NVIDIA")
    bundle = tmp_path / "run.zip"
    bundle.write_bytes(zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}))
    with pytest.raises(CommandError) as refused:
        call_command("submit", str(bundle), "--method", "CliLLM", "--user", "alice", "--hardware", "rtx 4090")
    assert "unknown hardware 'rtx 4090'; choose one of: A100, CPU, H100, H200, L40S" in str(refused.value)
    assert Submission.objects.count() == 0


def test_submit_command_checks_field_lengths_like_the_web_form(user, cpu, tasks_l1, tmp_path):
    bundle = tmp_path / "run.zip"
    bundle.write_bytes(zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}))
    with pytest.raises(CommandError, match="the field 'label': Ensure this value has at most 200 characters"):
        call_command("submit", str(bundle), "--method", "CliLLM", "--user", "alice", "--label", "L" * 201)
    assert Submission.objects.count() == 0
