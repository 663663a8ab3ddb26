"""The read-only JSON API: levels, a level's leaderboard (same parameters as the page), methods, entries."""

import json

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from leaderboard import intervals, scoring
from leaderboard import table as tables
from leaderboard.eval_results_store import export_entry
from leaderboard.models import Entry, Level
from leaderboard.views import details
from leaderboard.views.params import BadQuery, parse_query
from leaderboard.views.serialize import cell_data, table_data


def error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


@require_GET
def levels(request):
    data = [
        {
            "benchmark": level.benchmark.slug,
            "number": level.number,
            "name": level.name,
            "task_count": level.task_count,
            "leaderboard": reverse("leaderboard:api-leaderboard", args=[level.number]),
        }
        for level in Level.objects.select_related("benchmark")
    ]
    return JsonResponse({"levels": data})


@require_GET
def leaderboard(request, number):
    try:
        query = parse_query(request.GET)
        table = tables.build_table(number, query)
    except BadQuery as bad:
        return error(400, str(bad))
    except Level.DoesNotExist as missing:
        return error(404, str(missing))
    body = table.derive("json", lambda built: json.dumps(table_data(built), cls=DjangoJSONEncoder))
    return HttpResponse(body, content_type="application/json")


def entry_data(entry) -> dict:
    return {
        "entry_id": entry.pk,
        "name": entry.display_name,
        "label": entry.label,
        "method": entry.method.slug,
        "level": entry.level.number,
        "hardware": entry.hardware.name if entry.hardware else None,
        "date": entry.date.strftime("%Y-%m") if entry.date else None,
        "baseline": entry.baseline,
        "n_tasks": entry.n_tasks,
        "task_subset": entry.task_subset,
        "mode": entry.mode,
        "data_source": entry.data_source,
        "reproduce": entry.reproduce,
        "hyperparameters": entry.hyperparameters,
        "notes": entry.notes,
        "metadata": entry.metadata,
        "url": entry.get_absolute_url(),
    }


def score_interval(score) -> dict:
    """ci_low, ci_high, ci_method of a stored score (scoring.value_interval; 'n/a' when it has none)."""
    per_task = score.is_verified or score.ci_low is not None
    stored = (score.ci_low, score.ci_high)
    found = scoring.value_interval(score.metric_id, score.value, score.n_tasks, stored, per_task)
    if found is None:
        return {"ci_low": None, "ci_high": None, "ci_method": intervals.NOT_AVAILABLE}
    return {"ci_low": found.low, "ci_high": found.high, "ci_method": found.method}


def score_data(score) -> dict:
    """One stored score with its conventions, curation state and provenance."""
    data = {
        "id": score.pk,
        "metric": score.metric_id,
        "value": score.value,
        "provenance": score.provenance,
        "state": score.state,
        "state_reason": score.state_reason,
        "aggregation": score.aggregation,
        "threshold_op": score.threshold_op or None,
        "denominator": score.denominator,
        "baseline": score.baseline,
        "n_tasks": score.n_tasks,
        "suite": score.suite or None,
        "lane": score.lane,
        "notes": score.notes,
        **score_interval(score),
    }
    if score.is_verified:
        data["run"] = {
            "id": score.run_id,
            "url": score.run.get_absolute_url(),
            "hardware": score.run.hardware.name,
            "device": score.run.device,
            "harness_version": score.harness_version,
        }
        data["ci"] = [score.ci_low, score.ci_high] if score.ci_low is not None else None
    else:
        source = score.source
        data["source"] = {
            "title": source.title,
            "kind": source.kind,
            "arxiv_id": source.arxiv_id,
            "url": source.link,
        }
        data["source_table"] = score.source_table
        data["as_written"] = score.as_written
    return data


@require_GET
def entry(request, pk):
    found = details.entry_detail(pk)
    if found is None:
        return error(404, f"There is no entry {pk}.")
    scores = [score_data(score) for group in found["metric_groups"] for score in group["scores"]]
    runs = [
        {
            "id": run.pk,
            "url": run.get_absolute_url(),
            "status": run.status,
            "hardware": run.hardware.name,
            "device": run.device,
            "harness_version": run.harness_version,
            "created": run.created.isoformat(),
            "finished": run.finished.isoformat() if run.finished else None,
        }
        for run in found["runs"]
    ]
    return JsonResponse({**entry_data(found["entry"]), "scores": scores, "runs": runs})


@require_GET
def method(request, slug):
    found = details.method_detail(slug)
    if found is None:
        return error(404, f"There is no method {slug!r}.")
    method = found["method"]
    entries = []
    for level in found["levels"]:
        for row in level["rows"]:
            scores = {cell.metric.id: cell_data(cell) for cell in row["cells"]}
            entries.append({**entry_data(row["entry"]), "scores": scores})
    fields = ("name", "slug", "kind", "organisation", "backbone", "agent_models", "arxiv_id", "paper_url")
    data = {name: getattr(method, name) for name in fields}
    data |= {"code_url": method.code_url, "model_url": method.model_url, "description": method.description}
    return JsonResponse({**data, "url": method.get_absolute_url(), "entries": entries})


@require_GET
def eval_results(request, pk):
    """The verified run an entry's row shows, as KernelBench's eval_results.json."""
    found = Entry.objects.filter(pk=pk).first()
    if found is None:
        return error(404, f"There is no entry {pk}.")
    data = export_entry(found)
    if data is None:
        return error(404, f"Entry {pk} has no verified run to export.")
    response = JsonResponse(data)
    response["Content-Disposition"] = f'attachment; filename="eval_results_entry_{pk}.json"'
    return response
