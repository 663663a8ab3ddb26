"""python manage.py import_scores PATH.csv: bulk-add reported scores, one row per cell."""

from pathlib import Path

from django.core.management import BaseCommand, CommandError

from leaderboard.importers.errors import ImportFormatError
from leaderboard.importers.score_csv import import_scores_csv


class Command(BaseCommand):
    help = "Import reported scores from a CSV (columns in docs/importing.md). A bad file writes nothing."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, help="CSV file with a header row.")

    def handle(self, *args, path: Path, **options):
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"{path}: cannot read: {error}") from error
        try:
            report = import_scores_csv(text)
        except ImportFormatError as error:
            raise CommandError(f"{path}: nothing imported.\n{error}") from error
        if options["verbosity"] >= 1:
            self.stdout.write(f"{path.name}: {report.summary()}")
