"""Project-wide guards: no pending migrations, reference data present."""

import pytest
from django.core.management import call_command

from leaderboard.models import Level, Metric


@pytest.mark.django_db
def test_no_pending_migrations():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


@pytest.mark.django_db
def test_reference_data_loaded():
    assert list(Level.objects.values_list("number", "task_count")) == [(1, 100), (2, 100), (3, 50)]
    assert Metric.objects.filter(threshold__isnull=False).count() == 4
