"""Submit a kernel bundle: to a server through its API (--server, --token), or straight into this database."""

import logging
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import BaseCommand, CommandError

from leaderboard.reference_data import CPU_HARDWARE
from leaderboard.submissions import client
from leaderboard.submissions.bundles import BundleError
from leaderboard.submissions.forms import named_entry_details
from leaderboard.submissions.intake import submit_bundle
from leaderboard.submissions.quotas import QuotaExceeded
from leaderboard.submissions.routing import SubmissionRefused

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Submit BUNDLE (a runs/ zip or tar.gz, or a leaderboard JSON). With --server and --token it goes "
        "through the API; with --user it is stored in this site's database directly."
    )

    def add_arguments(self, parser):
        parser.add_argument("bundle", type=Path)
        parser.add_argument("--method", required=True, help="Method name (existing, or created).")
        parser.add_argument("--method-kind", default="llm", help="llm, trained, agent, compiler or baseline.")
        parser.add_argument("--backbone", default="")
        parser.add_argument("--agent-models", default="")
        parser.add_argument("--label", default="", help="Row name on the leaderboard.")
        parser.add_argument("--data-source", default="")
        parser.add_argument("--mode", default="", help="Protocol, e.g. zero-shot.")
        parser.add_argument(
            "--hardware",
            default=CPU_HARDWARE,
            help="Target hardware name, one with a worker queue, e.g. H200 (default CPU); a wrong name "
            "lists the choices.",
        )
        parser.add_argument("--notes", default="")
        parser.add_argument(
            "--suite",
            default="",
            help="Task suite (default: kernelbench once imported on the site, else builtin).",
        )
        parser.add_argument(
            "--public",
            action="store_true",
            help="Make the kernels public once a run of them is verified (default: private).",
        )
        parser.add_argument("--team", default="", help="Submit under this team (its slug or name).")
        parser.add_argument("--server", help="Base URL of the leaderboard, e.g. http://127.0.0.1:8000.")
        parser.add_argument("--token", help="API token (from issue_token).")
        parser.add_argument("--user", help="Without --server: submit as this user into the local database.")
        parser.add_argument("--wait", action="store_true", help="Follow the submission until it finishes.")

    def handle(self, *args, bundle, server, token, user, wait, **options):
        if not bundle.is_file():
            raise CommandError(f"{bundle}: no such file")
        fields = {name: str(options.get(name) or "") for name in client.FIELDS}
        fields["public"] = "true" if options["public"] else ""
        if server:
            self.submit_remote(server, token, bundle, fields, wait)
        elif user:
            self.submit_local(user, bundle, fields)
        else:
            raise CommandError("give --server URL --token T, or --user USERNAME for this site's database")

    def submit_remote(self, server, token, bundle, fields, wait):
        if not token:
            raise CommandError("--server needs --token")
        try:
            answer = client.submit(server, token, bundle, fields)
            urls = [item["status_url"] for item in answer["submissions"]]
            for item in answer["submissions"]:
                self.stdout.write(f"submission {item['id']} (level {item['level']}): {item['status_url']}")
            if wait:
                for state in client.wait(server, token, urls):
                    self.stdout.write(
                        f"#{state['id']} {state['status']} {state['done']}/{state['total']} {state['reason']}"
                    )
        except client.ApiError as error:
            raise CommandError(str(error)) from error

    def submit_local(self, username, bundle, fields):
        owner = get_user_model().objects.filter(username=username).first()
        if owner is None:
            raise CommandError(f"no user {username!r}")
        try:
            details = named_entry_details(fields)
            submissions = submit_bundle(owner, bundle.read_bytes(), bundle.name, details)
        except (BundleError, QuotaExceeded, SubmissionRefused) as error:
            raise CommandError(str(error)) from error
        for submission in submissions:
            self.stdout.write(
                f"submission {submission.pk} (level {submission.entry.level.number}): {submission.status}"
            )
