"""Hostile uploads through the real API and services, on the real database: each refused with a clear
reason and nothing stored (no row, no job), plus a property over archive structure checked against an
independent model of the bundle rules."""

import io
import stat
import tarfile
import warnings
import zipfile
import zlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderboard.submissions import intake
from leaderboard.submissions.bundles import KERNEL_FILE, BundleError
from leaderboard.submissions.intake import EntryDetails, submit_bundle
from leaderboard.submissions.tokens import issue_token
from tests.submissions.samples import TORCH_RELU_KERNEL, kernel_name, zip_bytes

pytestmark = pytest.mark.django_db
MiB = 1 << 20
KERNEL = "runs/hostile/" + kernel_name(1, 1)


@pytest.fixture
def token(user):
    return issue_token(user)[1]


@pytest.fixture
def known(make_tasks):
    return make_tasks((1, 1), (1, 2), (2, 1))


def post(client, token, data: bytes, name="bundle.zip", **extra):
    upload = SimpleUploadedFile(name, data)
    fields = {"bundle": upload, "method": "Hostile", "hardware": "CPU"}
    return client.post("/api/submissions", fields, HTTP_AUTHORIZATION=f"Bearer {token}", **extra)


def zip_with(infos: list[tuple[zipfile.ZipInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name": a hostile archive may repeat one
        for info, data in infos:
            archive.writestr(info, data)
    return buffer.getvalue()


def zeros_deflated(size: int) -> bytes:
    """A raw deflate stream of `size` zero bytes, built chunk by chunk (a 1 GiB bomb in ~1 MB)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(MiB)
    parts = [compressor.compress(chunk) for _ in range(size // MiB)]
    return b"".join(parts) + compressor.flush()


def bomb_zip(size: int, declared: int) -> bytes:
    """A zip whose one kernel inflates to `size` bytes while its headers declare `declared`."""
    body = zeros_deflated(size)
    name = KERNEL.encode()
    crc = zlib.crc32(b"")  # wrong on purpose: nobody should read far enough to check it
    local = (
        b"PK\x03\x04"
        + (20).to_bytes(2, "little")
        + bytes(2)
        + (8).to_bytes(2, "little")
        + bytes(4)
        + crc.to_bytes(4, "little")
        + len(body).to_bytes(4, "little")
        + declared.to_bytes(4, "little")
        + len(name).to_bytes(2, "little")
        + bytes(2)
        + name
    )
    central = (
        b"PK\x01\x02"
        + (20).to_bytes(2, "little") * 2
        + bytes(2)
        + (8).to_bytes(2, "little")
        + bytes(4)
        + crc.to_bytes(4, "little")
        + len(body).to_bytes(4, "little")
        + declared.to_bytes(4, "little")
        + len(name).to_bytes(2, "little")
        + bytes(8)
        + bytes(4)
        + bytes(4)
        + name
    )
    end = (
        b"PK\x05\x06"
        + bytes(4)
        + (1).to_bytes(2, "little") * 2
        + len(central).to_bytes(4, "little")
        + (len(local) + len(body)).to_bytes(4, "little")
        + bytes(2)
    )
    return local + body + central + end


def tar_gz(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def tar_member(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, link: str = ""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, (data if kind == tarfile.REGTYPE else None)


def big_tar_gz(size: int) -> bytes:
    """A tar.gz holding one `size`-byte file of zeros, compressed as it is written (never in memory)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as archive:
        info = tarfile.TarInfo("runs/hostile/weights.bin")
        info.size = size
        archive.addfile(info, io.BufferedReader(ZeroStream(size)))
    return buffer.getvalue()


class ZeroStream(io.RawIOBase):
    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = min(len(buffer), self.left)
        buffer[:count] = bytes(count)
        self.left -= count
        return count


def symlink_zip() -> bytes:
    info = zipfile.ZipInfo("runs/hostile/" + kernel_name(1, 2))
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return zip_with([(zipfile.ZipInfo(KERNEL), TORCH_RELU_KERNEL.encode()), (info, b"/etc/shadow")])


def nested_zip(depth: int) -> bytes:
    return zip_bytes({"runs/" + "d/" * depth + kernel_name(1, 1): TORCH_RELU_KERNEL})


def corrupt_deflate_zip() -> bytes:
    """A kernel whose compressed bytes were flipped: zlib raises while the member is read."""
    data = bytearray(zip_bytes({KERNEL: TORCH_RELU_KERNEL * 20}))
    start = 30 + len(KERNEL)
    data[start + 2 : start + 12] = bytes(byte ^ 0xFF for byte in data[start + 2 : start + 12])
    return bytes(data)


HOSTILE = {
    "zip bomb, honest headers (1 GiB of zeros)": (
        lambda: bomb_zip(1 << 30, 1 << 30),
        "a possible zip bomb",
    ),
    "zip bomb, lying headers (1 GiB declared as 100 bytes)": (
        lambda: bomb_zip(1 << 30, 100),
        "cannot be read",
    ),
    "tar.gz with ../ in a member name": (
        lambda: tar_gz([tar_member("runs/../../etc/" + kernel_name(1, 1), TORCH_RELU_KERNEL.encode())]),
        "'..' path components are not allowed",
    ),
    "tar.gz with an absolute member name": (
        lambda: tar_gz([tar_member("/etc/cron.d/" + kernel_name(1, 1), TORCH_RELU_KERNEL.encode())]),
        "absolute paths are not allowed",
    ),
    "zip with an absolute member name": (
        lambda: zip_bytes({"/tmp/" + kernel_name(1, 1): TORCH_RELU_KERNEL}),
        "absolute paths are not allowed",
    ),
    "tar.gz with a symbolic link": (
        lambda: tar_gz([tar_member(KERNEL, kind=tarfile.SYMTYPE, link="/etc/shadow")]),
        "symbolic and hard links are not allowed",
    ),
    "tar.gz with a hard link": (
        lambda: tar_gz(
            [tar_member("runs/a.txt", b"x"), tar_member(KERNEL, kind=tarfile.LNKTYPE, link="runs/a.txt")]
        ),
        "symbolic and hard links are not allowed",
    ),
    "zip with a symbolic link": (symlink_zip, "symbolic links are not allowed"),
    "10,000 tiny files": (
        lambda: zip_bytes({f"runs/many/{index}.txt": b"x" for index in range(10_000)}),
        "at most 2000 are allowed",
    ),
    "a 1 GB file inside a tar.gz": (lambda: big_tar_gz(1 << 30), "a possible zip bomb"),
    "non-UTF-8 kernel source": (lambda: zip_bytes({KERNEL: "é = 1\n".encode("latin-1")}), "not UTF-8"),
    "binary kernel source": (lambda: zip_bytes({KERNEL: bytes(range(256)) * 4}), "not UTF-8"),
    "NUL in a kernel source": (lambda: zip_bytes({KERNEL: b"import torch\0\n"}), "NUL bytes"),
    "a folder nested 100 deep": (lambda: nested_zip(100), "nested more than 64 deep"),
    "1,999 members with 4 KB hostile names": (
        lambda: zip_bytes({f"runs/{'x' * 4000}{index}/../k.py": b"" for index in range(1999)}),
        "… and 1899 more problems",
    ),
    "the same task twice, in two folders": (
        lambda: zip_bytes(
            {"runs/a/" + kernel_name(1, 1): "a = 1\n", "runs/b/" + kernel_name(1, 1): "b = 2\n"}
        ),
        "kernels given more than once: level_1_problem_1_sample_0",
    ),
    "the same task twice in the leaderboard JSON": (
        lambda: (
            b'{"kernels": {"level_1_problem_1_sample_0": "a = 1", "level_1_problem_1_sample_0": "b = 2"}}'
        ),
        "given more than once",
    ),
    "an unknown task id": (lambda: zip_bytes({kernel_name(9, 99): "a = 1\n"}), "unknown task ids"),
    "a gzip that is no tar": (lambda: zlib.compress(b"x" * 1000)[:2] + b"junk", "not a zip, tar.gz"),
    "a zip whose deflate stream is corrupt": (corrupt_deflate_zip, "cannot be read (Error -3"),
    "a sample number of 31 digits": (
        lambda: zip_bytes({f"runs/h/level_1_problem_1_sample_{10**30}_kernel.py": "a = 1\n"}),
        "(L, P and S of 1 to 6 ASCII digits)",
    ),
    "a JSON key with a 31-digit sample number": (
        lambda: f'{{"kernels": {{"level_1_problem_1_sample_{10**30}": "a = 1"}}}}'.encode(),
        "(L, P and S of 1 to 6 ASCII digits)",
    ),
    "a level with no sample 0": (
        lambda: zip_bytes({kernel_name(1, 1, 1): "a = 1\n"}),
        "no sample-0 kernel in level 1",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_upload_is_refused_and_nothing_is_stored(
    client, token, known, stored_counts, redis_conn, case
):
    build, reason = HOSTILE[case]
    before = stored_counts()
    response = post(client, token, build())
    assert response.status_code == 400, response.content[:500]
    body = response.json()
    assert reason in body["error"], body["error"][:2000]
    assert len(response.content) < 64 * 1024  # however many hostile members, the answer stays small
    assert stored_counts() == before
    assert redis_conn.dbsize() == 0  # no job was queued


def test_an_upload_over_the_limit_is_refused_unread(client, token, known, stored_counts, redis_conn):
    before = stored_counts()
    response = post(client, token, b"PK\x03\x04" + bytes(1024), CONTENT_LENGTH=str(1 << 30))
    assert response.status_code == 413
    assert "at most 33554432 are allowed" in response.json()["error"]
    assert stored_counts() == before


def test_a_file_growing_past_the_limit_is_cut_off(client, token, known, stored_counts, settings, tmp_path):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    before = stored_counts()
    response = post(client, token, bytes(33 * MiB))
    assert response.status_code == 413
    assert list(tmp_path.iterdir()) == []  # nothing spooled to disk
    assert stored_counts() == before


def test_the_upload_form_refuses_an_oversized_bundle_too(client, user, known):
    client.force_login(user)
    response = client.post(
        "/submit/",
        {"bundle": SimpleUploadedFile("big.zip", bytes(33 * MiB)), "new_method": "Big", "hardware": "1"},
    )
    assert response.status_code == 413
    assert b"the most a bundle may be" in response.content


def test_a_failure_half_way_through_storing_leaves_nothing(known, user, cpu, stored_counts, monkeypatch):
    data = zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL, kernel_name(2, 1): TORCH_RELU_KERNEL})
    calls = []
    original = intake.create_level_submission

    def fail_on_the_second_level(*args, **kwargs):
        calls.append(args[2])
        if len(calls) == 2:
            raise RuntimeError("the database went away half way")
        return original(*args, **kwargs)

    monkeypatch.setattr(intake, "create_level_submission", fail_on_the_second_level)
    before = stored_counts()
    with pytest.raises(RuntimeError):
        submit_bundle(user, data, "two-levels.zip", EntryDetails(method_name="Half", hardware=cpu))
    assert calls == [1, 2]  # the first level was stored before the failure …
    assert stored_counts() == before  # … and rolled back with it


# --- the property: an archive's structure against a model of the rules ----------------------------------

KNOWN_KEYS = ("level_1_problem_1", "level_1_problem_2", "level_2_problem_1")
NAME_PARTS = st.sampled_from(["runs", "a", "b", "..", ".", "", ".hidden", "__MACOSX", "x\\y", "é", "c:"])
KERNEL_NAMES = st.sampled_from(
    [
        kernel_name(1, 1),
        kernel_name(1, 1, 1),
        kernel_name(1, 2),
        kernel_name(2, 1),
        kernel_name(3, 7),
        "helper.py",
        "generation_config.yaml",
        "eval_results.json",
        ".DS_Store",
    ]
)
CONTENTS = st.sampled_from(["valid", "other", "empty", "latin1", "nul"])
KINDS = st.sampled_from(["file", "file", "file", "dir", "symlink", "hardlink", "fifo"])
MEMBERS = st.lists(
    st.tuples(st.lists(NAME_PARTS, max_size=3), KERNEL_NAMES, KINDS, CONTENTS, st.booleans()),
    min_size=1,
    max_size=6,
)


def content_bytes(kind: str) -> bytes:
    return {
        "valid": TORCH_RELU_KERNEL.encode(),
        "other": b"import torch\nx = 2\n",
        "empty": b"  \n",
        "latin1": "é = 1\n".encode("latin-1"),
        "nul": b"a = 1\0\n",
    }[kind]


def member_path(parts: list[str], name: str, absolute: bool) -> str:
    return ("/" if absolute else "") + "/".join([*parts, name])


def build(members, fmt: str) -> bytes:
    """The archive, in zip or tar.gz; member kinds the format cannot hold are written as plain files."""
    if fmt == "zip":
        infos = []
        for parts, name, kind, content, absolute in members:
            path = member_path(parts, name, absolute)
            info = zipfile.ZipInfo(path + ("/" if kind == "dir" else ""))
            if kind == "symlink":
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            if kind == "fifo":
                info.external_attr = (stat.S_IFIFO | 0o644) << 16
            infos.append((info, b"" if kind == "dir" else content_bytes(content)))
        return zip_with(infos)
    kinds = {
        "file": tarfile.REGTYPE,
        "dir": tarfile.DIRTYPE,
        "symlink": tarfile.SYMTYPE,
        "hardlink": tarfile.LNKTYPE,
        "fifo": tarfile.FIFOTYPE,
    }
    return tar_gz(
        [
            tar_member(member_path(parts, name, absolute), content_bytes(content), kinds[kind], "target")
            for parts, name, kind, content, absolute in members
        ]
    )


def model_of_the_rules(members, fmt: str) -> dict | None:
    """The kernels an upload must yield ({(level, problem, sample): text}), or None if it must be refused.

    The rules as docs/submissions.md states them: folders are ignored; any other member with an absolute
    path, a '..' component, a backslash or a drive letter, any link, device or pipe, and any name given
    twice refuses the whole upload; dot files and __MACOSX are skipped, as is whatever is not a .py file;
    every remaining .py must be a kernel name of a known task with a non-empty UTF-8 source without NUL,
    no task and sample twice; there must be at least one kernel, and each level must have a sample-0 one.
    """
    kernels, names = {}, set()
    for parts, name, kind, content, absolute in members:
        path = member_path(parts, name, absolute)
        kind = "file" if (fmt == "zip" and kind == "hardlink") else kind  # a zip has no hard links
        if kind == "dir":
            continue
        components = path.split("/")
        if path.startswith("/") or ".." in components or "\\" in path or path[1:2] == ":":
            return None
        if kind != "file" or path in names:
            return None
        names.add(path)
        meaningful = [part for part in components if part not in ("", ".")]
        if any(part.startswith(".") or part == "__MACOSX" for part in meaningful) or not name.endswith(".py"):
            continue
        match = KERNEL_FILE.fullmatch(name)
        if match is None or content in ("empty", "latin1", "nul"):
            return None
        key = tuple(int(group) for group in match.groups())
        if key in kernels or f"level_{key[0]}_problem_{key[1]}" not in KNOWN_KEYS:
            return None
        kernels[key] = content_bytes(content).decode()
    if {level for level, _, _ in kernels} != {level for level, _, sample in kernels if sample == 0}:
        return None  # a level without a sample-0 kernel: nothing of it would be evaluated
    return kernels or None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(members=MEMBERS, fmt=st.sampled_from(["zip", "tar.gz"]))
def test_an_archive_is_stored_whole_as_the_rules_say_or_not_at_all(
    known, django_user_model, cpu, members, fmt
):
    staff, _ = django_user_model.objects.get_or_create(username="prop", defaults={"is_staff": True})
    expected = model_of_the_rules(members, fmt)
    details = EntryDetails(method_name="Property", hardware=cpu)
    try:
        with transaction.atomic():
            try:
                created = submit_bundle(staff, build(members, fmt), "p", details)
            except BundleError:
                assert expected is None, members
                raise Rollback() from None
            assert expected is not None, members
            stored = {
                (k.task.level.number, k.task.problem_id, k.sample): k.source.text
                for submission in created
                for k in submission.kernels.select_related("task__level", "source")
            }
            assert stored == expected
            assert {s.entry.level.number for s in created} == {key[0] for key in expected}
            raise Rollback()
    except Rollback:
        pass


class Rollback(Exception):
    """Undo one example's writes (each example starts from the same empty database)."""
