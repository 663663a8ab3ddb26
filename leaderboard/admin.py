"""Admin curation: every model listed, searchable and filterable; score curation actions with history."""

from django import forms
from django.contrib import admin, messages
from django.db import models, transaction
from django.template.response import TemplateResponse
from simple_history.admin import SimpleHistoryAdmin

from leaderboard.models import (
    Benchmark,
    CurationState,
    Entry,
    Hardware,
    Level,
    Method,
    Metric,
    Score,
    Source,
)

HTTPS_URLS = {models.URLField: {"assume_scheme": "https"}}
"""Links typed without a scheme are taken as https (Django 6's default, adopted now)."""


class CurationForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, "cols": 60}), required=False)

    def __init__(self, *args, reason_required: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reason"].required = reason_required


def set_state(scores, state: str, reason: str) -> int:
    """Move scores to a curation state one by one, so each change is recorded in their history."""
    changed = 0
    with transaction.atomic():
        for score in scores.select_related(None).select_for_update():
            if score.state == state and score.state_reason == reason:
                continue
            score.state, score.state_reason = state, reason
            score._change_reason = f"curation: {state}" + (f" ({reason})" if reason else "")
            score.save(update_fields=["state", "state_reason"])
            changed += 1
    return changed


def curation_action(state: str, label: str, reason_required: bool):
    """An admin action that asks for a reason on an intermediate page, then applies the state."""

    def action(modeladmin, request, queryset):
        form = CurationForm(
            request.POST if "apply" in request.POST else None, reason_required=reason_required
        )
        if form.is_bound and form.is_valid():
            changed = set_state(queryset, state, form.cleaned_data["reason"].strip())
            modeladmin.message_user(request, f"{changed} score(s) marked {state}.", messages.SUCCESS)
            return None
        context = {
            **modeladmin.admin_site.each_context(request),
            "title": f"{label}: {queryset.count()} score(s)",
            "form": form,
            "queryset": queryset,
            "action": action.__name__,
            "state": state,
            "reason_required": reason_required,
            "opts": modeladmin.model._meta,
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/leaderboard/curation_confirm.html", context)

    action.__name__ = f"mark_{state}"
    action.short_description = label
    return action


class ScoreInline(admin.TabularInline):
    model = Score
    extra = 0
    fields = [
        "metric", "value", "as_written", "provenance", "source", "source_table", "baseline",
        "aggregation", "threshold_op", "denominator", "n_tasks", "state", "state_reason",
    ]  # fmt: skip
    autocomplete_fields = ["source"]
    show_change_link = True


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    formfield_overrides = HTTPS_URLS
    list_display = ["name", "slug", "version"]
    search_fields = ["name", "slug"]


@admin.register(Level)
class LevelAdmin(admin.ModelAdmin):
    list_display = ["__str__", "number", "task_count"]
    list_filter = ["benchmark"]
    search_fields = ["name"]


@admin.register(Hardware)
class HardwareAdmin(admin.ModelAdmin):
    list_display = ["name", "vendor", "queue"]
    search_fields = ["name"]


@admin.register(Method)
class MethodAdmin(SimpleHistoryAdmin):
    formfield_overrides = HTTPS_URLS
    list_display = ["name", "kind", "organisation", "backbone", "arxiv_id"]
    list_filter = ["kind"]
    search_fields = ["name", "organisation", "backbone", "agent_models", "arxiv_id"]
    prepopulated_fields = {"slug": ["name"]}


@admin.register(Entry)
class EntryAdmin(SimpleHistoryAdmin):
    list_display = [
        "display_name",
        "method",
        "level",
        "hardware",
        "baseline",
        "date",
        "data_source",
        "reproduce",
    ]
    list_filter = ["level", "baseline", "reproduce", "hardware", "method__kind"]
    search_fields = ["label", "method__name", "method__backbone", "data_source", "mode", "notes"]
    autocomplete_fields = ["method", "hardware"]
    readonly_fields = ["import_key", "created"]
    inlines = [ScoreInline]


@admin.register(Metric)
class MetricAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "name",
        "unit",
        "direction",
        "aggregation",
        "threshold_op",
        "threshold",
        "denominator",
    ]
    list_filter = ["aggregation", "denominator", "direction"]
    search_fields = ["id", "name"]


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    formfield_overrides = HTTPS_URLS
    list_display = ["title", "kind", "arxiv_id", "url", "published"]
    list_filter = ["kind"]
    search_fields = ["title", "arxiv_id", "url"]


@admin.register(Score)
class ScoreAdmin(SimpleHistoryAdmin):
    list_display = [
        "entry",
        "metric",
        "value",
        "provenance",
        "hardware",
        "suite_and_lane",
        "baseline",
        "aggregation",
        "state",
        "source",
    ]
    list_filter = [
        "provenance",
        "lane",
        "state",
        "metric",
        "baseline",
        "entry__level",
        "entry__hardware",
        "source__kind",
    ]
    search_fields = ["entry__label", "entry__method__name", "as_written", "source__title", "state_reason"]
    list_select_related = [
        "entry__method",
        "entry__level",
        "entry__hardware",
        "metric",
        "source",
        "run__hardware",
    ]
    autocomplete_fields = ["entry", "source"]
    raw_id_fields = ["run"]
    history_list_display = ["value", "state", "state_reason"]
    actions = [
        curation_action(CurationState.FLAGGED, "Flag for review (ranks with a mark)", reason_required=False),
        curation_action(
            CurationState.HACKED, "Mark as hacked (never ranks; reason required)", reason_required=True
        ),
        curation_action(CurationState.HIDDEN, "Hide (never ranks)", reason_required=False),
        curation_action(CurationState.VISIBLE, "Restore (visible, ranks)", reason_required=False),
    ]

    @admin.display(description="hardware", ordering="entry__hardware__name")
    def hardware(self, score):
        """The GPU of the run (verified) or of the entry (reported): what tells same-named entries apart."""
        hardware = score.run.hardware if score.run_id else score.entry.hardware
        return hardware.name if hardware else "—"

    @admin.display(description="suite · lane", ordering="lane")
    def suite_and_lane(self, score):
        return " · ".join(part for part in (score.suite, score.lane) if part) or "—"

    def has_delete_permission(self, request, obj=None):
        """Scores are never deleted: mark them hidden or hacked instead, keeping the evidence."""
        return False


# The submission, run and token admins live with the submissions code; teams in admin_teams.
from leaderboard import admin_teams as _teams_admin  # noqa: E402, F401
from leaderboard import pairing_admin as _pairing_admin  # noqa: E402, F401
from leaderboard.submissions import admin as _submissions_admin  # noqa: E402, F401
