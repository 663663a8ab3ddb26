"""Where a score comes from (its provenance), what curators decided about it (its curation state), and
the lane it ranks in.

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


class Lane(models.TextChoices):
    """Verified scores over the whole level of the ranking suite, timed on a GPU, rank among reported ones;
    those over another suite (the built-in one) or timed on the CPU form a separate lane, shown on request."""

    RANKING = "ranking", "Ranking"
    SEPARATE = "separate", "Separate lane (another suite or CPU timing)"
