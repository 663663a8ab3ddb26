"""Windowed counters, in the database so that every web process counts against the same limit: failed
logins (per user name and per address, security/login_throttle.py) and refused uploads (per user,
submissions/quotas.py), each under keys of its own."""

from django.db import models


class WindowedCounter(models.Model):
    """How many times one key (a user name's or an address's failed logins, a user's refused uploads) was
    counted since the start of its window."""

    key = models.CharField(max_length=200, unique=True)
    count = models.PositiveIntegerField(default=0)
    window_started = models.DateTimeField(db_index=True)

    def __str__(self):
        return f"{self.key}: {self.count} since {self.window_started:%Y-%m-%d %H:%M}"
