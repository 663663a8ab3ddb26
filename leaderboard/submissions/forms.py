"""The upload form: a bundle plus the entry's metadata (an existing method or a new one)."""

from django import forms
from django.conf import settings

from leaderboard.models import Hardware, Method, MethodKind
from leaderboard.submissions.services import DEFAULT_SUITE, EntryDetails
from tasks.models import Task


def suite_choices():
    suites = sorted(set(Task.objects.filter(is_current=True).values_list("suite", flat=True))) or [
        DEFAULT_SUITE
    ]
    return [(suite, suite) for suite in suites]


def default_hardware():
    """The embedded default evaluates on the CPU; a GPU deployment has no default target."""
    if settings.EVALUATOR["DEVICE"] == "cpu":
        return Hardware.objects.filter(queue="cpu").first()
    return None


class UploadForm(forms.Form):
    bundle = forms.FileField(
        help_text="A zip or tar.gz of a KernelBench runs/<name>/ folder, or a KernelBench leaderboard JSON."
    )
    method = forms.ModelChoiceField(
        Method.objects.all(), required=False, empty_label="— a new method —", help_text="An existing method…"
    )
    new_method = forms.CharField(max_length=120, required=False, help_text="…or the name of a new one.")
    method_kind = forms.ChoiceField(
        choices=MethodKind.choices, initial=MethodKind.ZERO_SHOT_LLM, required=False
    )
    backbone = forms.CharField(max_length=200, required=False, help_text="Base model, e.g. Qwen3-14B-Base.")
    agent_models = forms.CharField(max_length=300, required=False, help_text="Models an agent system calls.")
    label = forms.CharField(
        max_length=200, required=False, help_text="Row name (default: the method's name)."
    )
    data_source = forms.CharField(
        max_length=200, required=False, help_text="e.g. self-run, a paper's release."
    )
    mode = forms.CharField(max_length=120, required=False, help_text="Protocol, e.g. zero-shot, multi-turn.")
    hardware = forms.ModelChoiceField(
        Hardware.objects.exclude(queue=""), help_text="Where the kernels are verified (its worker queue)."
    )
    suite = forms.ChoiceField(choices=suite_choices, initial=DEFAULT_SUITE)
    notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["hardware"].initial = default_hardware()

    def clean(self):
        data = super().clean()
        method, new_name = data.get("method"), (data.get("new_method") or "").strip()
        if method and new_name:
            raise forms.ValidationError("Choose an existing method or name a new one, not both.")
        if not method and not new_name:
            raise forms.ValidationError("Choose an existing method or name a new one.")
        if new_name and Method.objects.filter(name__iexact=new_name).exists():
            self.add_error("new_method", "A method of this name exists: choose it from the list.")
        return data

    def details(self) -> EntryDetails:
        data = self.cleaned_data
        method = data.get("method")
        return EntryDetails(
            method_name=method.name if method else data["new_method"].strip(),
            hardware=data["hardware"],
            method_kind=data.get("method_kind") or MethodKind.ZERO_SHOT_LLM,
            backbone=data["backbone"],
            agent_models=data["agent_models"],
            label=data["label"],
            data_source=data["data_source"],
            mode=data["mode"],
            notes=data["notes"],
            suite=data["suite"],
        )
