"""`{{ text|public }}`: a failure reason or error message as the public may read it (no host path)."""

from django import template

from leaderboard.submissions.public import public_text

register = template.Library()
register.filter("public", public_text)
