"""import_tasks: load a KernelBench checkout's levels 1–3, or the built-in suite, as versioned tasks."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from tasks import suites
from tasks.importers import import_specs
from tasks.registry import TaskFileError, builtin_tasks, kernelbench_tasks, skipped_levels
from tasks.report import level_counts_text, short_levels


class Command(BaseCommand):
    help = "Import KernelBench-format tasks (idempotent; a changed problem gets a new version)."

    def add_arguments(self, parser):
        parser.add_argument(
            "path",
            nargs="?",
            type=Path,
            help="a KernelBench checkout (suite 'kernelbench': levels 1-3 at full size, the ranking suite)",
        )
        parser.add_argument(
            "--builtin", action="store_true", help="import the project's own suite ('builtin')"
        )

    def handle(self, *args, path=None, builtin=False, **options):
        if bool(path) == bool(builtin):
            raise CommandError("give either a KernelBench checkout PATH or --builtin")
        try:
            specs = builtin_tasks() if builtin else kernelbench_tasks(path)
            skipped = [] if builtin else skipped_levels(path)
            report = import_specs(specs)
        except (TaskFileError, ValueError, OSError) as error:
            raise CommandError(str(error)) from error
        suite = suites.BUILTIN if builtin else suites.KERNELBENCH
        lines = [
            f"{suite}: {len(specs)} task(s): {report.summary()}",
            f"{suite} now: {level_counts_text(suite)}",
        ]
        if skipped:
            lines.append(f"skipped: {', '.join(skipped)} (only levels 1-3 are imported)")
        if not builtin:
            lines += short_levels()
        self.stdout.write("\n".join(lines))
