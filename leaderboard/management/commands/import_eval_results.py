"""python manage.py import_eval_results PATH --method NAME --hardware HW --level N: a KernelBench
eval_results.json stored as a reported entry with per-task results (a malformed file stores nothing)."""

from pathlib import Path

from django.core.management import BaseCommand, CommandError

from leaderboard import pairing
from leaderboard.eval_results import EvalResultsError
from leaderboard.eval_results_store import ImportOptions, import_file
from leaderboard.models import Baseline, Entry

MAX_BYTES = 64 * 1024 * 1024


def read_text(path: str, what: str) -> str:
    file = Path(path)
    if not file.is_file():
        raise CommandError(f"{what} {path} does not exist")
    if file.stat().st_size > MAX_BYTES:
        raise CommandError(f"{what} {path} is over {MAX_BYTES // 2**20} MiB")
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise CommandError(f"{what} {path} is not UTF-8 text: {error}") from None


class Command(BaseCommand):
    help = "Import KernelBench's eval_results.json as reported per-task results of a method on a level."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--method", required=True, help="Method name (created when new).")
        parser.add_argument("--hardware", required=True, help="GPU the results were measured on, e.g. H100.")
        parser.add_argument("--level", required=True, type=int)
        parser.add_argument("--citation", default="", help="URL of the paper or run the file comes from.")
        parser.add_argument("--label", default="", help="The row's name, when not the method's.")
        parser.add_argument(
            "--baseline-times",
            default="",
            help="KernelBench's results/timing/<hardware>/<baseline>.json, for files without ref_runtime.",
        )
        parser.add_argument("--baseline", default=Baseline.EAGER, choices=[Baseline.EAGER, Baseline.COMPILE])

    def handle(self, *args, path, method, hardware, level, citation, label, baseline_times, baseline, **opts):
        text = read_text(path, "eval results file")
        times = read_text(baseline_times, "baseline timing file") if baseline_times else ""
        options = ImportOptions(method, hardware, level, citation, label, baseline)
        try:
            entry = import_file(text, options, times)
        except EvalResultsError as error:
            raise CommandError(f"{path}: {error}; nothing was stored") from None
        verified = Entry.objects.filter(method=entry.method, level=entry.level, scores__provenance="verified")
        for candidate in verified.distinct():
            pairing.pair_entry(candidate)
        count = entry.reported_results.count()
        self.stdout.write(f"entry {entry.pk}: {count} samples of {entry.method.name} on L{level} imported")
