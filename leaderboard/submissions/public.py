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


FRAME_LOCATION = re.compile(r'^[ \t]*File "(?P<path>[^"\n]*)", line (?P<line>\d+)')
"""A traceback frame's first line, with the file and line it names."""
TRACEBACK_HEADER = "Traceback (most recent call last):"
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning)\b")
"""The line that names an exception (`SyntaxError: …`, `torch.AcceleratorError: CUDA error: …`)."""


def error_location(lines: list[str]) -> tuple[int, str]:
    """(index of the last traceback frame line, ' (file.py, line N)' of it), or (-1, '')."""
    for index in range(len(lines) - 1, -1, -1):
        match = FRAME_LOCATION.match(lines[index])
        if match:
            return index, f" ({last_part(match['path'])}, line {match['line']})"
    return -1, ""


def first_error_line(text: str | None) -> str:
    """The first line of a kernel's real error, as the public may read it: the exception's own line
    (`SyntaxError: invalid syntax (kernel.py, line 12)`), with the file and line of the traceback's last
    frame when the line does not say where, never a host path. A message that already begins with its
    error (the harness writes them so) keeps its first line."""
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].strip() != TRACEBACK_HEADER:
        return public_text(lines[0])
    frame, where = error_location(lines)
    after = [line for line in lines[frame + 1 :] if not line[:1].isspace()]
    named = next((line for line in after if EXCEPTION_LINE.match(line)), after[0] if after else "")
    if not named:
        return "error (no message)"
    if "line " in named:
        where = ""
    return public_text(named.strip() + where)
