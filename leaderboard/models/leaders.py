"""Who led each level's ranked views, recorded whenever the scores change: the change feed's rank events."""

from django.db import models


class LeaderSnapshot(models.Model):
    """The entry ranked #1 in one view of one level from `created` on (no entry: the view was empty)."""

    level = models.ForeignKey("leaderboard.Level", on_delete=models.CASCADE, related_name="+")
    view = models.CharField(max_length=20, help_text="The table view, e.g. fast1 or geomean.")
    entry = models.ForeignKey(
        "leaderboard.Entry", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    metric_id = models.CharField(max_length=40, blank=True, help_text="The column the view ranks by.")
    value = models.FloatField(null=True, blank=True)
    previous_entry = models.ForeignKey(
        "leaderboard.Entry", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-pk"]
        indexes = [models.Index(fields=["level", "view", "-created"])]

    def __str__(self):
        return f"L{self.level_id} {self.view}: #{self.entry_id}"
