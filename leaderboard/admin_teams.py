"""Admin of teams: their members with roles, the methods they own, their tokens (read-only here)."""

from django.contrib import admin

from leaderboard.models import ApiToken, MethodOwnership, Team, TeamMembership


class MembershipInline(admin.TabularInline):
    model = TeamMembership
    extra = 1
    autocomplete_fields = ["user"]


class OwnershipInline(admin.TabularInline):
    model = MethodOwnership
    extra = 0
    autocomplete_fields = ["method"]
    verbose_name = "owned method"


class TeamTokenInline(admin.TabularInline):
    """A team's tokens are issued with `issue_token USER --team SLUG`, where the clear value is shown once."""

    model = ApiToken
    extra = 0
    can_delete = False
    fields = ("prefix", "user", "name", "created", "last_used", "revoked_at")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "created")
    search_fields = ("name", "slug", "memberships__user__username")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline, OwnershipInline, TeamTokenInline]
