"""API tokens: bearer tokens for the submission API, stored as their SHA-256 only."""

from django.conf import settings
from django.db import models

from leaderboard.models.teams import Team


class ApiToken(models.Model):
    """A bearer token for the submission API; only its SHA-256 is stored."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    team = models.ForeignKey(
        Team, on_delete=models.CASCADE, null=True, blank=True, related_name="api_tokens",
        help_text="A team's token: what it submits is under the team (its issuer must stay a member).",
    )  # fmt: skip
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12, help_text="First characters, to tell tokens apart.")
    token_hash = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)
    last_used = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self):
        return f"{self.prefix}… ({self.user})"
