"""The shape of every import command: read a UTF-8 file, import it, report counts or every bad line."""

from pathlib import Path

from django.core.management import BaseCommand, CommandError

from leaderboard.importers.errors import ImportFormatError


class ImportCommand(BaseCommand):
    """Subclasses set `importer` (text → ImportReport), `path_help` and, if needed, `encoding`."""

    path_help = "The file to import."
    encoding = "utf-8"

    def importer(self, text: str):
        raise NotImplementedError

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, help=self.path_help)

    def handle(self, *args, path: Path, **options):
        try:
            text = path.read_text(encoding=self.encoding)
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"{path}: cannot read: {error}") from error
        try:
            report = self.importer(text)
        except ImportFormatError as error:
            raise CommandError(f"{path}: nothing imported.\n{error}") from error
        if options["verbosity"] >= 1:
            self.stdout.write(f"{path.name}: {report.summary()}")
