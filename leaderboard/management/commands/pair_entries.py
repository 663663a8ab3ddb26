"""Re-pair every verified entry with its method's reported entry (manual pairings stay as staff set them)."""

from django.core.management import BaseCommand

from leaderboard.pairing import pair_all


class Command(BaseCommand):
    help = "Match every verified entry to its method's reported entry on its level (leaderboard.pairing)."

    def handle(self, *args, **options):
        counts = pair_all()
        self.stdout.write(
            f"{counts['paired']} paired automatically, {counts['manual']} manual kept, "
            f"{counts['unpaired']} without a reported match"
        )
