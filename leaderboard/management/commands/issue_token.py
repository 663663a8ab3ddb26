"""Create an API token for a user (creating the user if needed); the token is printed once."""

from django.contrib.auth import get_user_model
from django.core.management import BaseCommand, CommandError

from leaderboard.models import Team
from leaderboard.submissions.tokens import issue_token


class Command(BaseCommand):
    help = "Print a new API token for USERNAME (created if missing). Only its SHA-256 is stored."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="A label to tell the user's tokens apart.")
        parser.add_argument("--email", default="", help="E-mail of a user created by this command.")
        parser.add_argument("--team", default="", help="A team's token (its slug): submits under the team.")

    def handle(self, *args, username, name, email, team, **options):
        user, created = get_user_model().objects.get_or_create(username=username, defaults={"email": email})
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
            self.stderr.write(f"created user {username!r} (no password; set one with changepassword)")
        found = Team.objects.filter(slug=team).first() if team else None
        if team and found is None:
            raise CommandError(f"no team {team!r}")
        try:
            token, clear = issue_token(user, name=name, team=found)
        except ValueError as refused:
            raise CommandError(str(refused)) from refused
        self.stderr.write(f"token {token.prefix}… for {username}; it is shown once, store it now:")
        self.stdout.write(clear)
