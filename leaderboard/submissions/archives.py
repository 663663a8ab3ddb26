"""Safe reading of uploaded zip and tar.gz archives: bounded sizes, no links, devices or path tricks.

Nothing is ever extracted to disk. Members are read into memory only when the caller wants them, and
every read is bounded, so a lying header or a zip bomb cannot make us read more than the limits allow.
"""

import gzip
import io
import lzma
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

MiB = 1024 * 1024
UNREADABLE_ZIP = (zipfile.BadZipFile, NotImplementedError, ValueError, EOFError)
"""What opening a damaged zip raises (NotImplementedError: an unsupported 'zip file version')."""
UNREADABLE_ZIP_MEMBER = (
    zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError, EOFError, ValueError, zlib.error,
    lzma.LZMAError,
)  # fmt: skip
"""What reading a damaged zip member raises: corrupt deflate or LZMA data, a negative seek (ValueError),
an undecodable local file name (UnicodeDecodeError, a ValueError)."""


@dataclass(frozen=True)
class Limits:
    """Upper bounds on an uploaded bundle; anything over them is rejected, not truncated."""

    max_upload_bytes: int = 32 * MiB
    max_members: int = 2000
    max_total_bytes: int = 64 * MiB
    max_file_bytes: int = 1 * MiB
    max_ratio: float = 200.0
    ratio_floor_bytes: int = 1 * MiB
    max_kernels: int = 1000
    max_name_length: int = 1024
    max_depth: int = 64


@dataclass(frozen=True)
class Member:
    """A regular file inside an archive, with its contents if they were read."""

    path: str
    data: bytes | None


@dataclass
class Listing:
    """What reading an archive found: the members that were read, and every problem met."""

    members: list[Member] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class TooLarge(Exception):
    """A decompressed stream went past its bound."""


class BoundedReader(io.RawIOBase):
    """A read-only stream that raises TooLarge once more than `limit` bytes have been read from it."""

    def __init__(self, stream, limit: int):
        self.stream, self.limit, self.count = stream, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        chunk = self.stream.read(len(buffer))
        self.count += len(chunk)
        if self.count > self.limit:
            raise TooLarge
        buffer[: len(chunk)] = chunk
        return len(chunk)


def shown(name: str) -> str:
    """A member name for a message: quoted, and shortened when long (messages echo hostile names)."""
    return repr(name if len(name) <= 120 else f"{name[:60]}…{name[-40:]}")


def path_problem(name: str, limits: Limits = Limits()) -> str | None:
    """Why a member name is unsafe (absolute, traversal, odd characters, huge), or None if it is fine."""
    if not name or "\x00" in name:
        return "an empty or NUL-containing member name"
    if len(name) > limits.max_name_length:
        return f"{shown(name)}: member names longer than {limits.max_name_length} characters are not allowed"
    if name.count("/") > limits.max_depth:
        return f"{shown(name)}: folders nested more than {limits.max_depth} deep are not allowed"
    if "\\" in name:
        return f"{shown(name)}: backslashes are not allowed in member names"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return f"{shown(name)}: absolute paths are not allowed"
    if ".." in PurePosixPath(name).parts:
        return f"{shown(name)}: '..' path components are not allowed"
    return None


def ratio_problem(name: str, unpacked: int, packed: int, limits: Limits) -> str | None:
    """A compression-ratio problem (a likely bomb), or None."""
    if unpacked > limits.ratio_floor_bytes and unpacked > limits.max_ratio * max(packed, 1):
        return f"{name}: compression ratio over {limits.max_ratio:g} (a possible zip bomb)"
    return None


def detect_kind(data: bytes) -> str | None:
    """'zip', 'tar.gz' or None, from the leading magic bytes."""
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if data[:2] == b"\x1f\x8b":
        return "tar.gz"
    return None


def read_archive(data: bytes, wanted: Callable[[str], bool], limits: Limits) -> Listing:
    """List a zip or tar.gz held in memory, reading the members for which wanted(path) is true."""
    kind = detect_kind(data)
    if kind == "zip":
        return read_zip(data, wanted, limits)
    if kind == "tar.gz":
        return read_tar_gz(data, wanted, limits)
    return Listing(problems=["not a zip or tar.gz archive"])


def zip_member_problem(info: zipfile.ZipInfo) -> str | None:
    """Why a zip entry may not be read: links, devices, encryption; None for a plain file."""
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return f"{shown(info.filename)}: symbolic links are not allowed"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return f"{shown(info.filename)}: device, pipe and socket entries are not allowed"
    if info.flag_bits & 0x1:
        return f"{shown(info.filename)}: encrypted entries are not allowed"
    return None


def read_zip(data: bytes, wanted: Callable[[str], bool], limits: Limits) -> Listing:
    """Read a zip archive under the limits."""
    listing = Listing()
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except UNREADABLE_ZIP as error:
        return Listing(problems=[f"the zip archive cannot be read ({error})"])
    files = [info for info in infos if not info.is_dir()]
    if len(infos) > limits.max_members:
        return Listing(problems=[f"{len(infos)} archive members; at most {limits.max_members} are allowed"])
    declared = sum(info.file_size for info in files)
    if declared > limits.max_total_bytes:
        listing.problems.append(
            f"{declared} bytes uncompressed; at most {limits.max_total_bytes} allowed (a possible zip bomb)"
        )
        return listing
    seen: set[str] = set()
    total = 0
    for info in files:
        problem = path_problem(info.filename, limits) or zip_member_problem(info)
        problem = problem or ratio_problem(info.filename, info.file_size, info.compress_size, limits)
        if problem is None and info.filename in seen:
            problem = f"{shown(info.filename)} appears twice in the archive"
        seen.add(info.filename)
        if problem:
            listing.problems.append(problem)
            continue
        content = None
        if wanted(info.filename):
            content, problem = read_zip_member(archive, info, limits)
            if problem:
                listing.problems.append(problem)
                continue
            total += len(content)
        listing.members.append(Member(info.filename, content))
    listing.problems.extend(total_problems(total, len(data), limits))
    return listing


def read_zip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: Limits):
    """(bytes, None) or (None, problem): read one entry, never more than the per-file limit."""
    try:
        with archive.open(info) as stream:
            content = stream.read(limits.max_file_bytes + 1)
    except UNREADABLE_ZIP_MEMBER as error:
        return None, f"{shown(info.filename)} cannot be read ({error})"
    if len(content) > limits.max_file_bytes:
        return None, f"{shown(info.filename)} is larger than {limits.max_file_bytes} bytes"
    return content, None


def total_problems(total: int, packed: int, limits: Limits) -> list[str]:
    """Problems with the total size or overall ratio of what was read."""
    if total > limits.max_total_bytes:
        return [f"more than {limits.max_total_bytes} bytes uncompressed (a possible zip bomb)"]
    problem = ratio_problem("the archive", total, packed, limits)
    return [problem] if problem else []


def tar_member_problem(member: tarfile.TarInfo) -> str | None:
    """Why a tar member may not be read: links, devices, unusual types; None for a plain file."""
    if member.issym() or member.islnk():
        return f"{shown(member.name)}: symbolic and hard links are not allowed"
    if member.isdev():
        return f"{shown(member.name)}: device and pipe entries are not allowed"
    if not member.isreg():
        return f"{shown(member.name)}: unsupported archive member type"
    return None


def read_tar_gz(data: bytes, wanted: Callable[[str], bool], limits: Limits) -> Listing:
    """Read a gzip-compressed tar archive as a stream, under the limits."""
    listing = Listing()
    # Tar headers and padding add up to about 1.5 KiB per member beyond the file contents.
    stream_limit = limits.max_total_bytes + 2048 * (limits.max_members + 10)
    raw = BoundedReader(gzip.GzipFile(fileobj=io.BytesIO(data)), stream_limit)
    try:
        with tarfile.open(fileobj=io.BufferedReader(raw), mode="r|") as archive:
            read_tar_members(archive, wanted, limits, listing)
    except TooLarge:
        listing.problems.append(
            f"more than {limits.max_total_bytes} bytes uncompressed (a possible zip bomb)"
        )
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as error:
        listing.problems.append(f"the tar.gz archive cannot be read ({error})")
    if not listing.problems:
        problem = ratio_problem("the archive", raw.count, len(data), limits)
        listing.problems.extend([problem] if problem else [])
    return listing


def read_tar_members(archive: tarfile.TarFile, wanted, limits: Limits, listing: Listing) -> None:
    """Walk a streaming tar archive, appending members and problems to the listing."""
    seen: set[str] = set()
    count = 0
    for member in archive:
        count += 1
        if count > limits.max_members:
            listing.problems.append(f"more than {limits.max_members} archive members")
            return
        if member.isdir():
            continue
        problem = path_problem(member.name, limits) or tar_member_problem(member)
        if problem is None and member.name in seen:
            problem = f"{shown(member.name)} appears twice in the archive"
        if problem is None and wanted(member.name) and member.size > limits.max_file_bytes:
            problem = f"{shown(member.name)} is larger than {limits.max_file_bytes} bytes"
        seen.add(member.name)
        if problem:
            listing.problems.append(problem)
            continue
        content = None
        if wanted(member.name):
            content = archive.extractfile(member).read(limits.max_file_bytes + 1)
        listing.members.append(Member(member.name, content))
