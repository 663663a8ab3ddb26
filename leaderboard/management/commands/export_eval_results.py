"""python manage.py export_eval_results ENTRY_ID [-o PATH]: a verified run as KernelBench writes results."""

import json

from django.core.management import BaseCommand, CommandError

from leaderboard.eval_results_store import export_entry
from leaderboard.models import Entry


class Command(BaseCommand):
    help = (
        "Write the verified run an entry's row shows as KernelBench's eval_results.json (stdout by default)."
    )

    def add_arguments(self, parser):
        parser.add_argument("entry_id", type=int)
        parser.add_argument("-o", "--output", help="File to write (default: standard output).")

    def handle(self, *args, entry_id, output, **options):
        entry = Entry.objects.filter(pk=entry_id).first()
        if entry is None:
            raise CommandError(f"there is no entry {entry_id}")
        data = export_entry(entry)
        if data is None:
            raise CommandError(f"entry {entry_id} has no verified run to export")
        text = json.dumps(data, indent=4)
        if output:
            with open(output, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
            self.stderr.write(f"wrote {len(data)} problems to {output}")
        else:
            self.stdout.write(text)
