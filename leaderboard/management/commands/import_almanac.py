"""python manage.py import_almanac PATH: reported scores from an almanac level table or launch-post list."""

from pathlib import Path

from django.core.management import BaseCommand, CommandError

from leaderboard.importers.errors import ImportFormatError
from leaderboard.importers.writer import import_almanac_text


class Command(BaseCommand):
    help = "Import an almanac page (level table or launch-post list). Idempotent; a bad file writes nothing."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, help="The almanac page saved as text.")

    def handle(self, *args, path: Path, **options):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"{path}: cannot read: {error}") from error
        try:
            report = import_almanac_text(text)
        except ImportFormatError as error:
            raise CommandError(f"{path}: nothing imported.\n{error}") from error
        if options["verbosity"] >= 1:
            self.stdout.write(f"{path.name}: {report.summary()}")
