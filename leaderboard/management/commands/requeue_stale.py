"""Requeue evaluation runs whose worker died or whose job Redis lost (workers also do this on their own)."""

from django.core.management import BaseCommand

from leaderboard.submissions.reaper import DEFAULT_STALE_AFTER_S, reap


class Command(BaseCommand):
    help = (
        "Requeue runs stuck in running (no heartbeat) or queued without a live job; error them after 3 tries."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--stale-after",
            type=float,
            default=DEFAULT_STALE_AFTER_S,
            help=f"Seconds without a heartbeat before a run is lost (default {DEFAULT_STALE_AFTER_S}).",
        )
        parser.add_argument("--dry-run", action="store_true", help="Only list what would be requeued.")

    def handle(self, *args, stale_after, dry_run, **options):
        reaped = reap(stale_after, dry_run=dry_run)
        for item in reaped:
            self.stdout.write(
                f"run {item.run_id} (submission {item.submission_id}): {item.action}: {item.reason}"
            )
        self.stdout.write(f"{len(reaped)} stale run(s)")
