"""suites: the task suites in the database, per level, and how to import KernelBench while it is missing."""

from django.core.management.base import BaseCommand

from tasks.report import suite_lines


class Command(BaseCommand):
    help = "List the task suites (problems per level) and say how to import KernelBench if it is missing."

    def handle(self, *args, **options):
        self.stdout.write("\n".join(suite_lines()))
