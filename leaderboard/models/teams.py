"""Teams: organisations whose members submit under them; a team owns methods and API tokens."""

from django.conf import settings
from django.db import models
from django.utils.text import slugify


class Team(models.Model):
    """An organisation (a lab, a company): its members submit under it, within the team's quota."""

    name = models.CharField(max_length=120, unique=True)
    slug = models.SlugField(max_length=140, unique=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="TeamMembership", related_name="teams", blank=True
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def save(self, *args, **kwargs):
        if not self.slug:
            self.slug = slugify(self.name)[:140] or "team"
        super().save(*args, **kwargs)

    def has_member(self, user) -> bool:
        return user.is_authenticated and self.memberships.filter(user=user).exists()


class TeamMembership(models.Model):
    """A user in a team, with a role: owners and admins manage the team, every member submits under it."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        ADMIN = "admin", "Admin"
        MEMBER = "member", "Member"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=8, choices=Role.choices, default=Role.MEMBER)
    joined = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team", "user"]
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_membership_per_team")]

    def __str__(self):
        return f"{self.user} in {self.team} ({self.role})"


class MethodOwnership(models.Model):
    """A method owned by a team: only the team's members submit kernels for it, always under the team."""

    method = models.OneToOneField("leaderboard.Method", on_delete=models.CASCADE, related_name="ownership")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="ownerships")
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.method} (owned by {self.team})"
