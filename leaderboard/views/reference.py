"""Reference pages: the index of methods (with a search box) and the glossary of metrics and conventions."""

from django.db.models import Count, Q
from django.shortcuts import render

from leaderboard import scoring
from leaderboard.models import Method, MethodKind, Metric

MAX_QUERY_CHARS = 100


def method_index(request):
    """Every method with its kind, backbone and entry count; `q` searches name, organisation, backbone,
    the models an agent calls and the kind."""
    query = request.GET.get("q", "").strip()[:MAX_QUERY_CHARS]
    methods = Method.objects.annotate(entry_count=Count("entries")).order_by("name")
    if query:
        kinds = [value for value, label in MethodKind.choices if query.casefold() in label.casefold()]
        methods = methods.filter(
            Q(name__icontains=query)
            | Q(organisation__icontains=query)
            | Q(backbone__icontains=query)
            | Q(agent_models__icontains=query)
            | Q(kind__in=kinds)
        )
    context = {"methods": list(methods), "query": query, "total": Method.objects.count()}
    return render(request, "leaderboard/methods.html", context)


def glossary(request):
    """Every metric of the catalogue and the conventions behind the numbers (anchors: the metric ids)."""
    context = {
        "metrics": Metric.objects.order_by("position"),
        "p_max": scoring.FAST_P_MAX,
        "ranking_suite": scoring.RANKING_SUITE,
    }
    return render(request, "leaderboard/glossary.html", context)
