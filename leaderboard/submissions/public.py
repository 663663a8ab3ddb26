"""What the public may read of a failure: never a host path or a traceback.

Failure reasons and kernels' error messages come from the harness, the worker and the database driver,
and can name the machine's folders (`/srv/…/evaluator/child.py`) or carry a whole traceback. Every page and
API answer that shows them to the public passes them through `public_text`; the stored text stays whole,
and the owner and staff read it in full on the kernel's log page and in the run's harness log.
"""

import re

MAX_PUBLIC_CHARS = 500
TRACEBACK = re.compile(
    r"(?:Traceback \(most recent call last\):\n(?:[ \t]+\S.*\n?|\n)*"
    r"|\n*(?:During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:)\n)"
)
"""A traceback's header and its indented frame lines (the final `Error: message` line is kept)."""
FRAME = re.compile(r'^[ \t]*File "[^"\n]*", line \d+.*\n?', re.MULTILINE)
PATH = re.compile(r"(?<![\w.:/\\~-])(?:~|[A-Za-z]:)?(?:[/\\][\w.@+-]+)+[/\\]?")
"""An absolute (or home) path: POSIX or Windows, not a URL's path, a fraction or 'and/or'."""


def last_part(path: str) -> str:
    return re.split(r"[/\\]", path.rstrip("/\\"))[-1]


def public_text(text: str | None) -> str:
    """The text with tracebacks cut to their last line, each path cut to its last part, at most
    MAX_PUBLIC_CHARS characters."""
    if not text:
        return ""
    text = TRACEBACK.sub("", text)
    text = FRAME.sub("", text)
    text = PATH.sub(lambda match: last_part(match.group()), text)
    text = text.strip()
    return text if len(text) <= MAX_PUBLIC_CHARS else text[: MAX_PUBLIC_CHARS - 1] + "…"
