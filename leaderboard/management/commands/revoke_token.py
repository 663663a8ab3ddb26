"""Revoke API tokens by prefix or whole token, or all of a user's."""

from django.core.management import BaseCommand, CommandError

from leaderboard.models import ApiToken
from leaderboard.submissions.tokens import PREFIX_LENGTH, hash_token, revoke


def tokens_matching(given: str):
    """The tokens a prefix of at least PREFIX_LENGTH characters names; a whole token names itself alone.

    Only the first PREFIX_LENGTH characters are stored in clear, so a longer prefix is matched on those.
    """
    if len(given) < PREFIX_LENGTH:
        raise CommandError(
            f"give at least the token's first {PREFIX_LENGTH} characters (as issue_token and the user's "
            f"page show them), or the whole token; {given!r} is {len(given)}"
        )
    candidates = ApiToken.objects.filter(prefix=given[:PREFIX_LENGTH])
    whole = candidates.filter(token_hash=hash_token(given))
    return whole if whole.exists() else candidates


class Command(BaseCommand):
    help = (
        f"Revoke a token by its first {PREFIX_LENGTH} or more characters (as shown by issue_token) or the "
        "whole token, or every token of --user."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "prefix",
            nargs="?",
            help=f"The token's first {PREFIX_LENGTH} or more characters (kbl_…), or the whole token.",
        )
        parser.add_argument("--user", help="Revoke every active token of this username.")

    def handle(self, *args, prefix, user, **options):
        if bool(prefix) == bool(user):
            raise CommandError("give either a token prefix or --user USERNAME")
        tokens = ApiToken.objects.filter(user__username=user) if user else tokens_matching(prefix)
        if not tokens.exists():
            raise CommandError("no such token")
        self.stdout.write(f"revoked {revoke(tokens)} token(s)")
