"""`/api/data.json`: every public datum in one JSON document, streamed section by section (never built as
one string): methods, entries, scores with their provenance, and the per-task results of public runs."""

import json
from collections.abc import Iterable, Iterator

from django.http import StreamingHttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from leaderboard.models import Entry, Method, Score, TaskResult
from leaderboard.submissions.public import public_text
from leaderboard.submissions.public_kernels import shown_runs

FORMAT_VERSION = 1
CHUNK = 500


def dumps(value) -> str:
    return json.dumps(value, default=str, separators=(",", ":"))


def methods() -> Iterator[dict]:
    fields = ("id", "name", "slug", "organisation", "kind", "backbone", "agent_models", "paper_url",
              "arxiv_id", "code_url", "model_url", "description", "ownership__team__slug")  # fmt: skip
    for row in Method.objects.order_by("pk").values(*fields).iterator(chunk_size=CHUNK):
        row["team"] = row.pop("ownership__team__slug")
        yield row


def entries() -> Iterator[dict]:
    fields = ("id", "method_id", "level__number", "label", "hardware__name", "data_source", "mode",
              "reproduce", "hyperparameters", "date", "task_subset", "n_tasks", "baseline", "notes",
              "metadata", "created")  # fmt: skip
    for row in Entry.objects.order_by("pk").values(*fields).iterator(chunk_size=CHUNK):
        row["method"] = row.pop("method_id")
        row["level"] = row.pop("level__number")
        row["hardware"] = row.pop("hardware__name")
        yield row


def scores() -> Iterator[dict]:
    """Every score but the hidden, with its conventions, curation and provenance (a source or a run)."""
    rows = Score.objects.shown().select_related("source").order_by("pk")
    for score in rows.iterator(chunk_size=CHUNK):
        item = {
            "id": score.pk, "entry": score.entry_id, "metric": score.metric_id, "value": score.value,
            "provenance": score.provenance, "state": score.state, "state_reason": score.state_reason,
            "aggregation": score.aggregation, "threshold_op": score.threshold_op,
            "denominator": score.denominator, "baseline": score.baseline, "n_tasks": score.n_tasks,
            "suite": score.suite or None, "lane": score.lane, "notes": score.notes,
            "created": score.created,
        }  # fmt: skip
        if score.is_verified:
            item["run"] = score.run_id
            item["harness_version"] = score.harness_version
            item["ci"] = [score.ci_low, score.ci_high] if score.ci_low is not None else None
        else:
            source = score.source
            item["source"] = source and {"title": source.title, "kind": source.kind,
                                         "arxiv_id": source.arxiv_id, "url": source.link}  # fmt: skip
            item["source_table"], item["as_written"] = score.source_table, score.as_written
        yield item


def result_data(result: TaskResult, public_kernels: bool) -> dict:
    return {
        "task": result.task.key, "suite": result.task.suite, "task_version": result.task.version,
        "sample": result.kernel.sample, "compiled": result.compiled, "correct": result.correct,
        "error_kind": result.error_kind, "error_message": public_text(result.error_message),
        "runtime_ms": result.runtime_ms, "baseline_eager_ms": result.baseline_eager_ms,
        "baseline_compile_ms": result.baseline_compile_ms, "speedup_eager": result.speedup_eager,
        "speedup_compile": result.speedup_compile, "flags": result.flags, "degenerate": result.degenerate,
        "kernel_url": f"/public/kernels/{result.kernel_id}/" if public_kernels else None,
    }  # fmt: skip


def runs() -> Iterator[dict]:
    """Each public run with its per-task results (results read in chunks, in run order)."""
    found = shown_runs().select_related("hardware", "submission").order_by("pk")
    for run in found.iterator(chunk_size=CHUNK):
        results = TaskResult.objects.filter(run=run).select_related("task", "kernel").order_by("pk")
        public = run.submission.public_kernels
        yield {
            "id": run.pk, "entry": run.submission.entry_id, "submission": run.submission_id,
            "suite": run.submission.suite, "hardware": run.hardware.name, "device": run.device,
            "mode": run.mode, "harness_version": run.harness_version, "all_samples": run.all_samples,
            "created": run.created, "finished": run.finished, "public_kernels": public,
            "results": [result_data(result, public) for result in results.iterator(chunk_size=CHUNK)],
        }  # fmt: skip


def json_array(items: Iterable[dict]) -> Iterator[str]:
    yield "["
    for number, item in enumerate(items):
        yield ("," if number else "") + dumps(item)
    yield "]"


def document() -> Iterator[str]:
    header = {"format": FORMAT_VERSION, "generated": timezone.now().isoformat()}
    yield dumps(header)[:-1]
    for name, items in (("methods", methods), ("entries", entries), ("scores", scores), ("runs", runs)):
        yield f',"{name}":'
        yield from json_array(items())
    yield "}"


@require_GET
def data_json(request):
    response = StreamingHttpResponse(document(), content_type="application/json")
    response["Content-Disposition"] = 'inline; filename="kernelbench-leaderboard-data.json"'
    return response
