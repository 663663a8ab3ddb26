"""Fixtures for the leaderboard tests: the shipped seed data loaded into the test database."""

import pytest
from django.core.management import call_command


@pytest.fixture
def seeded(db):
    """The database with the almanac seed (L2 table and L3 launch posts) imported."""
    call_command("seed", verbosity=0)
