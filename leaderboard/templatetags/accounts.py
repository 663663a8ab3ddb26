"""`{% signup_open as open %}`: whether the site lets visitors create accounts (LEADERBOARD_SIGNUP)."""

from django import template

from leaderboard.views.accounts import signup_open as signup_is_open

register = template.Library()


@register.simple_tag
def signup_open() -> bool:
    return signup_is_open()
