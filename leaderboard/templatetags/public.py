"""`{{ text|public }}`: a failure reason or error message as the public may read it (no host path);
`{{ text|error_line }}`: the first line of a kernel's real error, with its line number."""

from django import template

from leaderboard.submissions.public import first_error_line, public_text

register = template.Library()
register.filter("public", public_text)
register.filter("error_line", first_error_line)
