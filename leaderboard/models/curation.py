"""Where a score comes from (its provenance) and what curators decided about it (its curation state).

Choices only, no model: `leaderboard.scoring` reads them without importing the Score model, whose
queryset reads the eligibility rules from scoring.
"""

from django.db import models


class Provenance(models.TextChoices):
    REPORTED = "reported", "Reported"
    VERIFIED = "verified", "Verified"


class CurationState(models.TextChoices):
    """Hidden and hacked scores never rank; flagged ones rank with a mark; nothing is ever deleted."""

    VISIBLE = "visible", "Visible"
    FLAGGED = "flagged", "Flagged"
    HACKED = "hacked", "Hacked"
    HIDDEN = "hidden", "Hidden"
