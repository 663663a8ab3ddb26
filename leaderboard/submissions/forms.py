"""The upload form (a bundle plus the entry's metadata), and the same fields checked for the API and CLI."""

from django import forms
from django.conf import settings
from django.db.models import Q

from leaderboard.models import Entry, Hardware, Method, MethodKind, Team
from leaderboard.reference_data import CPU_HARDWARE
from leaderboard.submissions.intake import EntryDetails
from leaderboard.submissions.routing import SubmissionRefused, evaluation_targets, find_target
from tasks.models import Task


def suite_choices():
    suites = sorted(set(Task.objects.current().values_list("suite", flat=True))) or [
        Task.objects.default_suite()
    ]
    return [(suite, suite) for suite in suites]


def default_hardware():
    """The embedded default evaluates on the CPU; a GPU deployment has no default target."""
    if settings.EVALUATOR["DEVICE"] == "cpu":
        return Hardware.objects.filter(queue="cpu").first()
    return None


def longest(model, name: str) -> int:
    """The model field's max_length: what the database column holds."""
    return model._meta.get_field(name).max_length


PUBLIC_HELP = (
    "Default: private (only you and staff see the kernels). If ticked, once a run is verified anyone can "
    "read and download its kernels, per task, from the run's page and the task pages."
)
TEAM_HELP = (
    "Submit under a team you belong to: the team's quota applies, and a new method becomes the team's. "
    "A team's method takes kernels from its members only."
)
TRUE_WORDS, FALSE_WORDS = {"1", "true", "yes", "on"}, {"", "0", "false", "no", "off"}


class EntryFieldsForm(forms.Form):
    """The entry's descriptive fields, bounded by their columns: shared by the web form and the API."""

    method_kind = forms.ChoiceField(
        choices=MethodKind.choices, initial=MethodKind.ZERO_SHOT_LLM, required=False
    )
    backbone = forms.CharField(
        max_length=longest(Method, "backbone"), required=False, help_text="Base model, e.g. Qwen3-14B-Base."
    )
    agent_models = forms.CharField(
        max_length=longest(Method, "agent_models"), required=False, help_text="Models an agent system calls."
    )
    label = forms.CharField(
        max_length=longest(Entry, "label"), required=False, help_text="Row name (default: the method's name)."
    )
    data_source = forms.CharField(
        max_length=longest(Entry, "data_source"),
        required=False,
        help_text="e.g. self-run, a paper's release.",
    )
    mode = forms.CharField(
        max_length=longest(Entry, "mode"), required=False, help_text="Protocol, e.g. zero-shot, multi-turn."
    )
    suite = forms.ChoiceField(
        choices=suite_choices,
        initial=Task.objects.default_suite,
        help_text="The suite the bundle's task ids refer to (kernelbench once imported: the ranking suite).",
    )
    notes = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    public = forms.BooleanField(
        required=False,
        initial=False,
        label="Make verified kernels public",
        help_text=PUBLIC_HELP,
    )

    def details_with(self, method_name: str, hardware: Hardware) -> EntryDetails:
        data = self.cleaned_data
        return EntryDetails(
            method_name=method_name,
            hardware=hardware,
            method_kind=data.get("method_kind") or MethodKind.ZERO_SHOT_LLM,
            backbone=data["backbone"],
            agent_models=data["agent_models"],
            label=data["label"],
            data_source=data["data_source"],
            mode=data["mode"],
            notes=data["notes"],
            suite=data["suite"],
            public=bool(data.get("public")),
            team=data.get("team") or None,
        )


class UploadForm(EntryFieldsForm):
    field_order = ["bundle", "method", "new_method", "team", "method_kind", "backbone", "agent_models",
                   "label", "data_source", "mode", "hardware", "suite", "notes", "public"]  # fmt: skip

    bundle = forms.FileField(
        help_text="A zip or tar.gz of a KernelBench runs/<name>/ folder, or a KernelBench leaderboard JSON."
    )
    method = forms.ModelChoiceField(
        Method.objects.all(), required=False, empty_label="— a new method —", help_text="An existing method…"
    )
    new_method = forms.CharField(
        max_length=longest(Method, "name"), required=False, help_text="…or the name of a new one."
    )
    hardware = forms.ModelChoiceField(
        evaluation_targets(), help_text="Where the kernels are verified (its worker queue)."
    )
    team = forms.ModelChoiceField(
        Team.objects.all(),
        required=False,
        empty_label="— myself —",
        to_field_name="slug",
        help_text=TEAM_HELP,
    )

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["hardware"].initial = default_hardware()
        mine = user.teams.all() if user is not None else Team.objects.none()  # by name (Team.Meta)
        self.fields["team"].queryset = mine
        if not mine.exists():
            self.fields["team"].widget = forms.HiddenInput()

    def clean(self):
        data = super().clean()
        method, new_name = data.get("method"), (data.get("new_method") or "").strip()
        if method and new_name:
            raise forms.ValidationError("Choose an existing method or name a new one, not both.")
        if not method and not new_name:
            raise forms.ValidationError("Choose an existing method or name a new one.")
        if new_name and Method.objects.named(new_name) is not None:
            self.add_error("new_method", "A method of this name exists: choose it from the list.")
        return data

    def details(self) -> EntryDetails:
        method = self.cleaned_data.get("method")
        name = method.name if method else self.cleaned_data["new_method"].strip()
        return self.details_with(name, self.cleaned_data["hardware"])


class NamedEntryForm(EntryFieldsForm):
    """The API's and the CLI's fields: the method and the hardware by name, the suite optional."""

    method = forms.CharField(max_length=longest(Method, "name"))
    hardware = forms.CharField(max_length=longest(Hardware, "name"), required=False)
    suite = forms.ChoiceField(choices=suite_choices, required=False)
    public = forms.CharField(required=False, help_text="true or false (default false: private kernels).")
    team = forms.CharField(max_length=140, required=False, help_text="A team's slug or name.")

    def clean_team(self) -> Team | None:
        name = self.cleaned_data["team"].strip()
        if not name:
            return None
        team = Team.objects.filter(Q(slug=name) | Q(name__iexact=name)).first()
        if team is None:
            raise forms.ValidationError(f"there is no team {name!r}")
        return team

    def clean_public(self) -> bool:
        """The API's and the CLI's `public`: 1/true/yes/on or 0/false/no/off (any case), default false."""
        word = self.cleaned_data["public"].strip().lower()
        if word not in TRUE_WORDS | FALSE_WORDS:
            raise forms.ValidationError("give true or false")
        return word in TRUE_WORDS

    def clean_hardware(self) -> Hardware:
        try:
            return find_target(self.cleaned_data["hardware"] or CPU_HARDWARE)
        except SubmissionRefused as refused:
            raise forms.ValidationError(str(refused)) from refused

    def details(self) -> EntryDetails:
        return self.details_with(self.cleaned_data["method"], self.cleaned_data["hardware"])


def named_entry_details(fields) -> EntryDetails:
    """Entry details from the API's or the CLI's fields, checked like the web form's; SubmissionRefused
    names every bad field."""
    form = NamedEntryForm(fields)
    if not form.is_valid():
        raise SubmissionRefused("; ".join(field_problems(form)))
    return form.details()


def field_problems(form: forms.Form) -> list[str]:
    """One message per bad field, naming it as the API's clients spell it."""
    return [
        f"the field {name!r}: {' '.join(messages)}" if name != "__all__" else " ".join(messages)
        for name, messages in form.errors.items()
    ]
