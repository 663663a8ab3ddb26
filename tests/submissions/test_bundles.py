"""Bundle validation: both formats accepted, and every bad-archive case rejected with every problem named."""

import contextlib
import io
import json
import stat
import struct
import tarfile
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leaderboard.submissions.archives import Limits
from leaderboard.submissions.bundles import LEADERBOARD_JSON, RUNS_ARCHIVE, BundleError, check_bundle
from tests.submissions.samples import (
    TORCH_RELU_KERNEL,
    kernel_name,
    leaderboard_json,
    tar_gz_bytes,
    zip_bytes,
)

KNOWN = {"level_1_problem_1", "level_1_problem_2", "level_2_problem_1"}


def check(data: bytes, limits: Limits | None = None):
    return check_bundle(data, "bundle", KNOWN, "builtin", limits)


def problems_of(data: bytes, limits: Limits | None = None) -> list[str]:
    with pytest.raises(BundleError) as raised:
        check(data, limits)
    return raised.value.problems


def test_runs_zip_is_read_with_its_samples_and_skipped_files():
    data = zip_bytes(
        {
            "runs/my_run/" + kernel_name(1, 1): TORCH_RELU_KERNEL,
            "runs/my_run/" + kernel_name(1, 1, 1): TORCH_RELU_KERNEL + "# other sample\n",
            "runs/my_run/" + kernel_name(2, 1): TORCH_RELU_KERNEL,
            "runs/my_run/generation_config.yaml": "model: x\n",
            "runs/my_run/eval_results.json": "{}",
            "__MACOSX/runs/my_run/._" + kernel_name(1, 1): b"\x00\x05\x16\x07",
        }
    )
    bundle = check(data)
    assert bundle.format == RUNS_ARCHIVE
    assert [(k.level, k.problem_id, k.sample) for k in bundle.kernels] == [(1, 1, 0), (1, 1, 1), (2, 1, 0)]
    assert bundle.levels == [1, 2]
    assert sorted(bundle.skipped) == ["runs/my_run/eval_results.json", "runs/my_run/generation_config.yaml"]
    assert bundle.kernels[0].text == TORCH_RELU_KERNEL


def test_runs_tar_gz_is_read():
    bundle = check(tar_gz_bytes({"run/" + kernel_name(1, 2): TORCH_RELU_KERNEL}))
    assert [(k.task_key, k.sample) for k in bundle.kernels] == [("level_1_problem_2", 0)]


def test_leaderboard_json_is_read_with_its_metadata():
    data = leaderboard_json({"level_1_problem_1_sample_0": TORCH_RELU_KERNEL}, {"display_name": "Mine"})
    bundle = check(data)
    assert bundle.format == LEADERBOARD_JSON
    assert bundle.metadata == {"display_name": "Mine"}
    assert bundle.kernels[0].file_name == "level_1_problem_1_sample_0_kernel.py"


def test_every_problem_is_named_in_one_error():
    data = zip_bytes(
        {
            "../escape/" + kernel_name(1, 1): TORCH_RELU_KERNEL,
            kernel_name(1, 2): b"\xff\xfe not utf-8",
            kernel_name(9, 9): TORCH_RELU_KERNEL,
            kernel_name(7, 1): TORCH_RELU_KERNEL,
            "level_1_problem_3_kernel.py": TORCH_RELU_KERNEL,
        }
    )
    problems = problems_of(data)
    text = "\n".join(problems)
    assert "'..' path components" in text
    assert "not UTF-8" in text
    assert "unknown task ids in suite 'builtin': level_7_problem_1, level_9_problem_9" in text
    assert "level_1_problem_3_kernel.py" in text
    assert "not named" in text
    assert len(problems) == 4
    with pytest.raises(BundleError) as raised:
        check(data)
    assert raised.value.message.startswith("The bundle was rejected (4 problems):")


def test_absolute_paths_are_rejected():
    assert "absolute paths" in problems_of(zip_bytes({"/etc/" + kernel_name(1, 1): "x = 1\n"}))[0]
    assert "absolute paths" in problems_of(tar_gz_bytes({"/tmp/" + kernel_name(1, 1): "x = 1\n"}))[0]


def test_traversal_in_tar_is_rejected():
    assert "'..'" in problems_of(tar_gz_bytes({"a/../../" + kernel_name(1, 1): "x = 1\n"}))[0]


def test_backslash_names_are_rejected():
    assert "backslashes" in problems_of(zip_bytes({"..\\" + kernel_name(1, 1): "x = 1\n"}))[0]


def zip_with_mode(name: str, mode: int, content: bytes = b"target") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo(name)
        info.external_attr = mode << 16
        archive.writestr(info, content)
        archive.writestr(kernel_name(1, 1), TORCH_RELU_KERNEL)
    return buffer.getvalue()


def test_zip_symlink_is_rejected():
    assert "symbolic links" in problems_of(zip_with_mode(kernel_name(1, 2), stat.S_IFLNK | 0o777))[0]


def test_zip_device_and_fifo_are_rejected():
    assert "device" in problems_of(zip_with_mode("dev", stat.S_IFCHR | 0o600))[0]
    assert "device" in problems_of(zip_with_mode("pipe", stat.S_IFIFO | 0o600))[0]


def tar_with(member: tarfile.TarInfo) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.addfile(member)
        data = TORCH_RELU_KERNEL.encode()
        info = tarfile.TarInfo(kernel_name(1, 1))
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (tarfile.SYMTYPE, "links are not allowed"),
        (tarfile.LNKTYPE, "links are not allowed"),
        (tarfile.CHRTYPE, "device"),
        (tarfile.BLKTYPE, "device"),
        (tarfile.FIFOTYPE, "device"),
    ],
)
def test_tar_links_and_devices_are_rejected(kind, expected):
    member = tarfile.TarInfo(kernel_name(1, 2))
    member.type = kind
    member.linkname = "/etc/passwd"
    assert expected in problems_of(tar_with(member))[0]


def test_encrypted_zip_entries_are_rejected():
    data = bytearray(zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL}))
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local and central flag bits
        at = data.find(signature) + offset
        data[at] |= 0x1
    assert "encrypted" in problems_of(bytes(data))[0]


def test_zip_bomb_by_ratio_is_rejected():
    bomb = zip_bytes({kernel_name(1, 1): b"#" * (3 * 1024 * 1024)})
    limits = Limits(max_file_bytes=4 * 1024 * 1024)
    assert "compression ratio" in problems_of(bomb, limits)[0]


def test_zip_bomb_by_declared_size_is_rejected_before_reading():
    bomb = zip_bytes({f"pad{i}.txt": b"\0" * (1024 * 1024) for i in range(3)})
    limits = Limits(max_total_bytes=2 * 1024 * 1024)
    assert "a possible zip bomb" in problems_of(bomb, limits)[0]


def test_tar_gz_bomb_is_stopped_while_streaming():
    bomb = tar_gz_bytes({f"pad{i}.txt": b"\0" * (1024 * 1024) for i in range(4)})
    limits = Limits(max_total_bytes=1024 * 1024, max_members=10)
    assert "a possible zip bomb" in problems_of(bomb, limits)[0]


def test_too_many_members_is_rejected():
    data = zip_bytes({f"f{i}.txt": "x" for i in range(11)})
    assert "archive members" in problems_of(data, Limits(max_members=10))[0]


def test_oversized_upload_and_kernel_are_rejected():
    data = zip_bytes({kernel_name(1, 1): TORCH_RELU_KERNEL + "#" * 5000})
    assert "larger than 4096 bytes" in problems_of(data, Limits(max_file_bytes=4096))[0]
    assert "at most 100 are allowed" in problems_of(data, Limits(max_upload_bytes=100))[0]


def test_nul_bytes_and_empty_sources_are_rejected():
    problems = problems_of(zip_bytes({kernel_name(1, 1): "import torch\x00\n", kernel_name(1, 2): "  \n"}))
    assert any("NUL" in p for p in problems)
    assert any("is empty" in p for p in problems)


def test_duplicates_across_folders_are_rejected():
    data = zip_bytes(
        {"a/" + kernel_name(1, 1): TORCH_RELU_KERNEL, "b/" + kernel_name(1, 1): TORCH_RELU_KERNEL}
    )
    assert "more than once: level_1_problem_1_sample_0" in problems_of(data)[0]


def test_an_archive_without_kernels_is_rejected():
    assert "no kernels found" in problems_of(zip_bytes({"notes.txt": "hello"}))[0]


@pytest.mark.parametrize(
    "data",
    [b"just some text", b"PK\x03\x04broken zip", b"\x1f\x8b\x08\x00broken gzip", b"\x1f\x8b" + b"\0" * 40],
)
def test_unreadable_files_are_rejected(data):
    assert problems_of(data)


def test_gzip_that_is_not_a_tar_is_rejected():
    import gzip

    assert "cannot be read" in problems_of(gzip.compress(b"not a tar archive at all" * 100))[0]


def zip_of_one_kernel(method: int = zipfile.ZIP_DEFLATED) -> bytearray:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr(kernel_name(1, 1), TORCH_RELU_KERNEL * 20)
    return bytearray(buffer.getvalue())


def damaged_payload(method: int, offsets: range) -> bytes:
    """The kernel's compressed bytes flipped (deflate: zlib.error; the LZMA properties: LZMAError)."""
    data = zip_of_one_kernel(method)
    start = 30 + len(kernel_name(1, 1))  # past the local header
    for offset in offsets:
        data[start + offset] ^= 0xFF
    return bytes(data)


def too_new_zip_version() -> bytes:
    """A central directory asking for zip version 9.9: zipfile raises NotImplementedError on opening."""
    data = zip_of_one_kernel()
    central = data.rfind(b"PK\x01\x02")
    data[central + 6 : central + 8] = struct.pack("<H", 99)
    return bytes(data)


def negative_member_offset() -> bytes:
    """An end record placing the central directory past where it is: a member offset below zero."""
    data = zip_of_one_kernel()
    end = data.rfind(b"PK\x05\x06")
    (offset,) = struct.unpack("<I", data[end + 16 : end + 20])
    data[end + 16 : end + 20] = struct.pack("<I", offset + 100)
    return bytes(data)


def undecodable_local_name() -> bytes:
    """A local header flagged UTF-8 whose name is not: UnicodeDecodeError when the member is opened."""
    data = zip_of_one_kernel()
    (flags,) = struct.unpack("<H", data[6:8])
    data[6:8] = struct.pack("<H", flags | 0x800)
    data[30] = 0xFF
    return bytes(data)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (damaged_payload(zipfile.ZIP_DEFLATED, range(2, 12)), "cannot be read (Error -3"),
        (damaged_payload(zipfile.ZIP_LZMA, range(4, 5)), "_kernel.py' cannot be read ("),
        (too_new_zip_version(), "the zip archive cannot be read (zip file version"),
        (negative_member_offset(), "negative seek"),
        (undecodable_local_name(), "can't decode byte 0xff"),
    ],
    ids=["deflate", "lzma", "zip-version", "negative-seek", "local-name"],
)
def test_damaged_zips_are_rejected_not_crashed(data, expected):
    [problem] = problems_of(data)
    assert expected in problem


@pytest.mark.parametrize(
    "name",
    [
        "level_\u0661_problem_1_sample_0_kernel.py",  # an Arabic-Indic one
        "level_1_problem_1_sample_\uff10_kernel.py",  # a fullwidth zero
        f"level_1_problem_1_sample_{10**30}_kernel.py",
        "level_1_problem_1_sample_1234567_kernel.py",
    ],
)
def test_kernel_file_names_need_short_ascii_numbers(name):
    problems = problems_of(zip_bytes({kernel_name(1, 2): TORCH_RELU_KERNEL, name: TORCH_RELU_KERNEL}))
    assert problems == [f"{name!r}: a Python file not named level_L_problem_P_sample_S_kernel.py "
                        "(L, P and S of 1 to 6 ASCII digits)"]  # fmt: skip


@pytest.mark.parametrize(
    "key",
    [
        "level_1_problem_1_sample_0\n",
        "level_1_problem_1_sample_\u0660",
        f"level_1_problem_1_sample_{10**30}",
        "level_1234567_problem_1_sample_0",
    ],
)
def test_leaderboard_json_keys_need_short_ascii_numbers(key):
    data = leaderboard_json({"level_1_problem_2_sample_0": TORCH_RELU_KERNEL, key: TORCH_RELU_KERNEL})
    assert problems_of(data) == [
        f"kernel keys not of the form level_L_problem_P_sample_S (L, P and S of 1 to 6 ASCII digits): {key!r}"
    ]


def test_a_kernel_name_with_a_trailing_newline_is_not_a_kernel():
    bundle = check(zip_bytes({kernel_name(1, 2): TORCH_RELU_KERNEL, kernel_name(1, 1) + "\n": "x = 1"}))
    assert [kernel.file_name for kernel in bundle.kernels] == [kernel_name(1, 2)]
    assert bundle.skipped == [kernel_name(1, 1) + "\n"]


def test_six_digit_numbers_are_accepted():
    bundle = check(
        leaderboard_json({"level_1_problem_1_sample_0": "x = 1", "level_1_problem_1_sample_999999": "y"})
    )
    assert [kernel.sample for kernel in bundle.kernels] == [0, 999999]


def test_a_level_without_a_sample_zero_kernel_is_rejected():
    data = leaderboard_json(
        {
            "level_1_problem_1_sample_0": TORCH_RELU_KERNEL,
            "level_1_problem_2_sample_1": TORCH_RELU_KERNEL,
            "level_2_problem_1_sample_1": TORCH_RELU_KERNEL,
        }
    )
    [problem] = problems_of(data)
    assert problem.startswith("no sample-0 kernel in level 2: sample 0 of a task is the one evaluated")


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ([1, 2], '"kernels" object'),
        ({"kernels": []}, '"kernels" object'),
        ({"kernels": {"level_1_problem_1_sample_0": 5}}, "must be a string"),
        ({"kernels": {"l1p1": "x"}}, "not of the form"),
        (
            {"metadata": [], "kernels": {"level_1_problem_1_sample_0": "x = 1"}},
            '"metadata" must be an object',
        ),
    ],
)
def test_malformed_leaderboard_json_is_rejected(document, expected):
    assert any(expected in p for p in problems_of(json.dumps(document).encode()))


def test_invalid_json_is_rejected():
    assert "not valid UTF-8 JSON" in problems_of(b'{"kernels": ')[0]


def test_empty_upload_is_rejected():
    assert problems_of(b"") == ["the upload is empty"]


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=2048))
def test_arbitrary_bytes_never_crash_validation(data):
    with contextlib.suppress(BundleError):
        check(data)  # anything but a BundleError fails the test


# Names an archive can hold: no NUL (zip and tar cut names there) and no lone surrogates (not encodable).
MEMBER_NAMES = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=30
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(MEMBER_NAMES, st.binary(max_size=200), max_size=5))
def test_arbitrary_archives_never_crash_validation(files):
    for data in (zip_bytes(files), tar_gz_bytes(files)):
        with contextlib.suppress(BundleError):
            check(data)
