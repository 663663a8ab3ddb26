"""python manage.py import_scores PATH.csv: bulk-add reported scores, one row per cell."""

from leaderboard.importers.command import ImportCommand
from leaderboard.importers.score_csv import import_scores_csv


class Command(ImportCommand):
    help = "Import reported scores from a CSV (columns in docs/importing.md). A bad file writes nothing."
    path_help = "CSV file with a header row."
    encoding = "utf-8-sig"

    def importer(self, text):
        return import_scores_csv(text)
