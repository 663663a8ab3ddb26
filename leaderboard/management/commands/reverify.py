"""Re-run submissions through the current harness (scores are keyed by harness version; old runs stay)."""

from django.core.management import BaseCommand, CommandError

from leaderboard.models import Submission
from leaderboard.submissions.lifecycle import outdated_submissions, reverify
from leaderboard.submissions.routing import SubmissionRefused


class Command(BaseCommand):
    help = (
        "Re-verify submissions by id, every finished one (--all) or those of an older harness (--outdated)."
    )

    def add_arguments(self, parser):
        parser.add_argument("ids", nargs="*", type=int, help="Submission ids.")
        parser.add_argument("--all", action="store_true", help="Every finished submission.")
        parser.add_argument(
            "--outdated", action="store_true", help="Those last run by another harness version."
        )
        parser.add_argument(
            "--all-samples", action="store_true", help="Evaluate every sample, not only sample 0."
        )

    def handle(self, *args, ids, all, outdated, all_samples, **options):
        if not (ids or all or outdated):
            raise CommandError("give submission ids, --all or --outdated")
        chosen = Submission.objects.filter(pk__in=ids) if ids else Submission.objects.all()
        if outdated:
            chosen = chosen & outdated_submissions()
        queued = 0
        for submission in chosen.order_by("pk"):
            try:
                run = reverify(submission, all_samples=all_samples)
            except SubmissionRefused as error:
                self.stderr.write(str(error))
                continue
            queued += 1
            self.stdout.write(f"submission {submission.pk}: run {run.pk} queued on {run.queue}")
        self.stdout.write(f"{queued} submission(s) queued for re-verification")
