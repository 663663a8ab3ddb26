"""Revoke API tokens by prefix, or all of a user's."""

from django.core.management import BaseCommand, CommandError

from leaderboard.models import ApiToken
from leaderboard.submissions.tokens import revoke


class Command(BaseCommand):
    help = "Revoke a token by its prefix (as shown by issue_token), or every token of --user."

    def add_arguments(self, parser):
        parser.add_argument("prefix", nargs="?", help="The token's first characters (kbl_…).")
        parser.add_argument("--user", help="Revoke every active token of this username.")

    def handle(self, *args, prefix, user, **options):
        if bool(prefix) == bool(user):
            raise CommandError("give either a token prefix or --user USERNAME")
        tokens = (
            ApiToken.objects.filter(user__username=user) if user else ApiToken.objects.filter(prefix=prefix)
        )
        if not tokens.exists():
            raise CommandError("no such token")
        self.stdout.write(f"revoked {revoke(tokens)} token(s)")
