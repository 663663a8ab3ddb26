"""Django application config for the leaderboard."""

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def restore_reference_data(sender, apps=None, **kwargs):
    """After migrate or flush: the benchmark, levels and metric catalogue exist again."""
    from leaderboard.reference_data import ensure_reference_data

    if apps is None:
        ensure_reference_data()
    else:
        ensure_reference_data(apps)


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from leaderboard import events
        from leaderboard.table import cache

        post_migrate.connect(restore_reference_data, sender=self)
        cache.connect_signals()
        events.connect_signals()
