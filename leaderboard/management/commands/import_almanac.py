"""python manage.py import_almanac PATH: reported scores from an almanac level table or launch-post list."""

from leaderboard.importers.command import ImportCommand
from leaderboard.importers.writer import import_almanac_text


class Command(ImportCommand):
    help = "Import an almanac page (level table or launch-post list). Idempotent; a bad file writes nothing."
    path_help = "The almanac page saved as text."

    def importer(self, text):
        return import_almanac_text(text)
