"""Load the seed data shipped with the project: the almanac's reported scores and the built-in tasks."""

import io
from pathlib import Path

from django.core.management import BaseCommand, call_command

SEED_DIR = Path(__file__).resolve().parents[2] / "seed"
ALMANAC_FILES = ["almanac_kernelbench_l2.txt", "almanac_kernelbench_l3.txt"]


class Command(BaseCommand):
    help = "Import the shipped seed data: almanac pages (L2, L3) and the built-in task suite. Idempotent."

    def handle(self, *args, **options):
        for name in ALMANAC_FILES:
            call_command("import_almanac", str(SEED_DIR / name), verbosity=options["verbosity"])
        quiet = options["verbosity"] == 0
        call_command("import_tasks", builtin=True, stdout=io.StringIO() if quiet else self.stdout)
