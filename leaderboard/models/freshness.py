"""A counter of committed changes to what the leaderboard shows; built tables are cached under it."""

from django.db import models


class DataVersion(models.Model):
    """One row. Every save or delete of a shown model bumps it in the same transaction (table/cache.py)."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    value = models.BigIntegerField(default=0)

    def __str__(self):
        return f"data version {self.value}"
