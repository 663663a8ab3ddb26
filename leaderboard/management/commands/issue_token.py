"""Create an API token for a user (creating the user if needed); the token is printed once."""

from django.contrib.auth import get_user_model
from django.core.management import BaseCommand

from leaderboard.submissions.tokens import issue_token


class Command(BaseCommand):
    help = "Print a new API token for USERNAME (created if missing). Only its SHA-256 is stored."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="A label to tell the user's tokens apart.")
        parser.add_argument("--email", default="", help="E-mail of a user created by this command.")

    def handle(self, *args, username, name, email, **options):
        user, created = get_user_model().objects.get_or_create(username=username, defaults={"email": email})
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
            self.stderr.write(f"created user {username!r} (no password; set one with changepassword)")
        token, clear = issue_token(user, name=name)
        self.stderr.write(f"token {token.prefix}… for {username}; it is shown once, store it now:")
        self.stdout.write(clear)
