"""Kernel bundles: the two accepted formats, read and validated before anything is stored.

(a) A zip or tar.gz of a KernelBench ``runs/<name>/`` folder holding
    ``level_{L}_problem_{P}_sample_{S}_kernel.py`` files (other files, such as generation_config.yaml or
    eval_results.json, are listed as skipped and not stored);
(b) the KernelBench leaderboard JSON ``{"metadata": {...}, "kernels": {"level_L_problem_P_sample_S": src}}``.

`check_bundle` collects every problem it finds and raises one `BundleError` naming them all.
"""

import hashlib
import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from json.decoder import scanstring
from pathlib import PurePosixPath

from leaderboard.submissions.archives import Limits, detect_kind, read_archive, shown

MAX_DIGITS = 6
"""Level, problem and sample numbers have at most this many ASCII digits (the database stores 32-bit ints)."""
NUMBER = rf"(\d{{1,{MAX_DIGITS}}})"
KERNEL_KEY = rf"level_{NUMBER}_problem_{NUMBER}_sample_{NUMBER}"
KERNEL_FILE = re.compile(rf"{KERNEL_KEY}_kernel\.py", re.ASCII)
JSON_KEY = re.compile(KERNEL_KEY, re.ASCII)
"""Both are matched with fullmatch: no trailing newline, no non-ASCII digits, no huge numbers."""
NUMBERS_RULE = f"L, P and S of 1 to {MAX_DIGITS} ASCII digits"
MAX_LISTED = 40
"""At most this many items of one kind are named in an error message; the rest are counted."""
MAX_PROBLEMS = 100
"""At most this many problems are named when a bundle is rejected; the rest are counted."""
MAX_JSON_VALUES = 20_000
"""Keys and values of all kinds in a leaderboard JSON: room for 1,000 kernels (a key and a source each) and
their metadata. Counted before parsing, so that a document of a million tiny keys is refused in
milliseconds instead of parsed for seconds."""
MAX_JSON_DEPTH = 32
JSON_BRACKET = re.compile(r"[\[\]{}]")

RUNS_ARCHIVE = "runs_archive"
LEADERBOARD_JSON = "leaderboard_json"


class BundleError(Exception):
    """An upload was rejected; `problems` names every reason."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__(self.message)

    @property
    def message(self) -> str:
        count = len(self.problems)
        head = f"The bundle was rejected ({count} problem{'s' if count != 1 else ''}):"
        return "\n".join([head, *(f"- {problem}" for problem in self.problems)])


@dataclass(frozen=True)
class BundleKernel:
    """One kernel source for one task and sample."""

    level: int
    problem_id: int
    sample: int
    file_name: str
    text: str

    @property
    def task_key(self) -> str:
        return f"level_{self.level}_problem_{self.problem_id}"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


@dataclass
class Bundle:
    """A validated bundle: its kernels, its own metadata and the files it skipped."""

    format: str
    name: str
    sha256: str
    kernels: list[BundleKernel] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    @property
    def levels(self) -> list[int]:
        return sorted({kernel.level for kernel in self.kernels})

    def kernels_of_level(self, level: int) -> list[BundleKernel]:
        return [kernel for kernel in self.kernels if kernel.level == level]


def listed(items: list[str]) -> str:
    """Join items for a message, naming at most MAX_LISTED of them."""
    named = ", ".join(items[:MAX_LISTED])
    more = len(items) - MAX_LISTED
    return f"{named} and {more} more" if more > 0 else named


def decode_source(label: str, data: bytes, limits: Limits) -> tuple[str | None, str | None]:
    """(text, None) or (None, problem): a kernel source must be non-empty UTF-8 text without NUL bytes."""
    if len(data) > limits.max_file_bytes:
        return None, f"{label} is larger than {limits.max_file_bytes} bytes"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        return None, f"{label} is not UTF-8 text (byte {error.start})"
    if "\x00" in text:
        return None, f"{label} contains NUL bytes: not a Python source"
    if not text.strip():
        return None, f"{label} is empty"
    return text, None


def is_ignorable(path: str) -> bool:
    """Operating-system litter in archives: macOS resource forks and hidden files."""
    parts = PurePosixPath(path).parts
    return any(part.startswith(".") or part == "__MACOSX" for part in parts)


def wants_content(path: str) -> bool:
    """Whether an archive member's bytes are needed: kernel-like Python files only."""
    return not is_ignorable(path) and PurePosixPath(path).name.endswith(".py")


def kernels_from_archive(data: bytes, limits: Limits, bundle: Bundle, problems: list[str]) -> None:
    """Fill the bundle from a runs/ archive, appending every problem met."""
    listing = read_archive(data, wants_content, limits)
    problems.extend(listing.problems)
    for member in listing.members:
        name = PurePosixPath(member.path).name
        match = KERNEL_FILE.fullmatch(name)
        if is_ignorable(member.path):
            continue
        if match is None:
            if name.endswith(".py"):
                problems.append(
                    f"{shown(member.path)}: a Python file not named level_L_problem_P_sample_S_kernel.py "
                    f"({NUMBERS_RULE})"
                )
            else:
                bundle.skipped.append(member.path)
            continue
        text, problem = decode_source(member.path, member.data or b"", limits)
        if problem:
            problems.append(problem)
            continue
        level, problem_id, sample = (int(group) for group in match.groups())
        bundle.kernels.append(BundleKernel(level, problem_id, sample, name, text))


def json_skeleton(text: str) -> str:
    """The document with its strings emptied, so that what is left is structure; raises TooManyValues past
    MAX_JSON_VALUES strings and ValueError for a string that does not end.

    Each string is skipped by json's own C scanner, so the work is linear in the document and the Python
    loop runs once per string, at most MAX_JSON_VALUES + 1 times (a regular expression for JSON strings
    would backtrack for minutes over a few kilobytes of escaped quotes that never close).
    """
    pieces, position = [], 0
    for _ in range(MAX_JSON_VALUES + 1):
        start = text.find('"', position)
        if start < 0:
            pieces.append(text[position:])
            return '""'.join(pieces)
        pieces.append(text[position:start])
        _, position = scanstring(text, start + 1)
    raise TooManyValues(
        f"the JSON holds more than {MAX_JSON_VALUES} strings; at most that many values are read"
    )


class TooManyValues(Exception):
    """A JSON document too large to parse."""


def json_shape_problem(text: str) -> str | None:
    """Why a JSON document is too large to parse (too many strings, values or objects, nested too deep),
    or None; raises ValueError if one of its strings does not end (it is not JSON then)."""
    try:
        skeleton = json_skeleton(text)
    except TooManyValues as too_many:
        return str(too_many)
    values = skeleton.count(",") + skeleton.count(":") + 1
    containers = skeleton.count("[") + skeleton.count("{")
    if values > MAX_JSON_VALUES or containers > MAX_JSON_VALUES:
        return f"the JSON holds more than {MAX_JSON_VALUES} keys, values or objects; no more are read"
    depth = deepest = 0
    for bracket in JSON_BRACKET.findall(skeleton):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    if deepest > MAX_JSON_DEPTH:
        return f"the JSON is nested {deepest} deep; at most {MAX_JSON_DEPTH} levels are read"
    return None


def kernels_from_json(data: bytes, limits: Limits, bundle: Bundle, problems: list[str]) -> None:
    """Fill the bundle from a KernelBench leaderboard JSON document (its size checked before it is parsed)."""
    try:
        decoded = data.decode("utf-8-sig")
        too_large = json_shape_problem(decoded)
        if too_large:
            problems.append(too_large)
            return
        document = json.loads(decoded, object_pairs_hook=refuse_repeated_keys)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        problems.append(f"not valid UTF-8 JSON ({error})")
        return
    if not isinstance(document, dict) or not isinstance(document.get("kernels"), dict):
        problems.append('the JSON must be an object with a "kernels" object inside')
        return
    metadata = document.get("metadata", {})
    if not isinstance(metadata, dict):
        problems.append('"metadata" must be an object')
    else:
        bundle.metadata = metadata
    bad_keys = []
    for key, source in document["kernels"].items():
        match = JSON_KEY.fullmatch(key)
        if match is None:
            bad_keys.append(shown(key))
            continue
        if not isinstance(source, str):
            problems.append(f"kernels[{key!r}] must be a string of Python source")
            continue
        text, problem = decode_source(f"kernels[{key!r}]", source.encode("utf-8", "surrogatepass"), limits)
        if problem:
            problems.append(problem)
            continue
        level, problem_id, sample = (int(group) for group in match.groups())
        bundle.kernels.append(BundleKernel(level, problem_id, sample, f"{key}_kernel.py", text))
    if bad_keys:
        problems.append(
            f"kernel keys not of the form level_L_problem_P_sample_S ({NUMBERS_RULE}): {listed(bad_keys)}"
        )


def refuse_repeated_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object, refusing a key given twice (json.loads would silently keep the last one)."""
    document = {}
    for key, value in pairs:
        if key in document:
            raise ValueError(f"the key {key!r} is given more than once")
        document[key] = value
    return document


def looks_like_json(data: bytes) -> bool:
    return data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"[")


def structure_problems(
    bundle: Bundle, known: Collection[str], suite: str, limits: Limits, unreadable: bool
) -> list[str]:
    """Duplicates, count limits, an empty bundle (unless parts were unreadable) and unknown task ids."""
    problems = []
    seen: dict[tuple[int, int, int], int] = {}
    for kernel in bundle.kernels:
        key = (kernel.level, kernel.problem_id, kernel.sample)
        seen[key] = seen.get(key, 0) + 1
    duplicates = [f"level_{lv}_problem_{p}_sample_{s}" for (lv, p, s), n in sorted(seen.items()) if n > 1]
    if duplicates:
        problems.append(f"kernels given more than once: {listed(duplicates)}")
    if not bundle.kernels and not unreadable:
        problems.append("no kernels found (expected level_L_problem_P_sample_S_kernel.py files)")
    if len(bundle.kernels) > limits.max_kernels:
        problems.append(f"{len(bundle.kernels)} kernels; at most {limits.max_kernels} are allowed")
    unknown = sorted({k.task_key for k in bundle.kernels if k.task_key not in known}, key=task_key_order)
    if unknown:
        problems.append(f"unknown task ids in suite {suite!r}: {listed(unknown)}")
    return problems + sample_zero_problems(bundle)


def sample_zero_problems(bundle: Bundle) -> list[str]:
    """A level without any sample-0 kernel would have nothing to evaluate: sample 0 is what ranks."""
    unranked = [
        str(level)
        for level in bundle.levels
        if not any(kernel.sample == 0 for kernel in bundle.kernels_of_level(level))
    ]
    if not unranked:
        return []
    levels = "level" if len(unranked) == 1 else "levels"
    return [
        f"no sample-0 kernel in {levels} {listed(unranked)}: sample 0 of a task is the one evaluated and "
        "ranked, so each level needs at least one level_L_problem_P_sample_0 kernel"
    ]


def task_key_order(key: str) -> tuple[int, ...]:
    """Sort level_L_problem_P keys numerically."""
    return tuple(int(part) for part in re.findall(r"\d+", key))


def check_bundle(
    data: bytes, name: str, known: Collection[str], suite: str, limits: Limits | None = None
) -> Bundle:
    """Read and validate an uploaded bundle against the known task keys; raise BundleError on any problem."""
    limits = limits or Limits()
    if len(data) > limits.max_upload_bytes:
        raise BundleError([f"the upload is {len(data)} bytes; at most {limits.max_upload_bytes} are allowed"])
    if not data:
        raise BundleError(["the upload is empty"])
    problems: list[str] = []
    if detect_kind(data):
        bundle = Bundle(RUNS_ARCHIVE, name, hashlib.sha256(data).hexdigest())
        kernels_from_archive(data, limits, bundle, problems)
    elif looks_like_json(data):
        bundle = Bundle(LEADERBOARD_JSON, name, hashlib.sha256(data).hexdigest())
        kernels_from_json(data, limits, bundle, problems)
    else:
        raise BundleError(["not a zip, tar.gz or KernelBench leaderboard JSON file"])
    problems.extend(structure_problems(bundle, known, suite, limits, unreadable=bool(problems)))
    if len(problems) > MAX_PROBLEMS:
        problems = [*problems[:MAX_PROBLEMS], f"… and {len(problems) - MAX_PROBLEMS} more problems"]
    if problems:
        raise BundleError(problems)
    bundle.kernels.sort(key=lambda k: (k.level, k.problem_id, k.sample))
    return bundle
