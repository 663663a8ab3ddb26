"""Failed-login counters, in the database so that every web process counts against the same limit."""

from django.db import models


class LoginFailureCount(models.Model):
    """Failed logins for one user name or one address since the start of its window."""

    key = models.CharField(max_length=200, unique=True)
    count = models.PositiveIntegerField(default=0)
    window_started = models.DateTimeField(db_index=True)

    def __str__(self):
        return f"{self.key}: {self.count} since {self.window_started:%Y-%m-%d %H:%M}"
