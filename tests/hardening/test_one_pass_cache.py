"""The one-pass fingerprint kernel as the reference processes compiled it, copied into candidates' processes:
only ever a copy (never the reference processes' folder), only where their cache is out of candidates' reach,
and a compile pointed at that folder leaves the process's own Triton cache as it was."""

import os

import pytest

from evaluator.checks import ONE_PASS_CACHE_VARIABLE
from evaluator.child.fingerprint import triton_cache
from evaluator.policy import make_policy
from evaluator.sandbox import isolation
from evaluator.sandbox.limits import default_limits
from evaluator.sandbox.process import ChildProcess, Share
from evaluator.trusted import settings as trusted_settings
from evaluator.trusted.compile_cache import CompileCache


@pytest.fixture
def compiled(tmp_path):
    """A worker cache whose reference processes compiled the one-pass kernel."""
    cache = CompileCache(tmp_path / "cache")
    folder = cache.baseline_dir() / isolation.ONE_PASS_FOLDER / "0123abcd"
    folder.mkdir(parents=True)
    (folder / "_partial_sums.cubin").write_bytes(b"\x7fELF kernel")
    return cache


def settings_with(cache, monkeypatch, private: bool):
    monkeypatch.setattr(isolation, "detect", lambda python: isolation.Layers(new_root=private))
    return trusted_settings.Settings(policy=make_policy("hardened", "cpu"), cache=cache, arch_list=None)


def test_a_candidate_gets_the_reference_s_compiled_kernel_as_a_copy_only_share(compiled, monkeypatch):
    shares = trusted_settings.one_pass_cache_copy(settings_with(compiled, monkeypatch, private=True))
    assert [(share.mount, share.variables, share.copy_only) for share in shares] == [
        (isolation.ONE_PASS_MOUNT, {"TRITON_CACHE_DIR": ""}, True)
    ]
    assert shares[0].source == compiled.baseline_dir() / isolation.ONE_PASS_FOLDER
    assert trusted_settings.one_pass_cache_copy(settings_with(compiled, monkeypatch, private=False)) == []


def test_nothing_is_shared_before_a_reference_process_compiled_it(tmp_path, monkeypatch):
    settings = settings_with(CompileCache(tmp_path / "empty"), monkeypatch, private=True)
    assert trusted_settings.one_pass_cache_copy(settings) == []


@pytest.mark.parametrize("new_root", [True, False])
def test_a_copy_only_share_is_a_copy_with_a_new_root_and_left_out_without_one(
    compiled, monkeypatch, new_root
):
    monkeypatch.setattr(isolation, "detect", lambda python: isolation.Layers(new_root=new_root))
    source = compiled.baseline_dir() / isolation.ONE_PASS_FOLDER
    share = Share(source, isolation.ONE_PASS_MOUNT, {"TRITON_CACHE_DIR": ""}, copy_only=True)
    child = ChildProcess({}, default_limits("cpu"), shares=[share])
    with child:
        if new_root:  # bound at the mount is a copy in the child's temp dir
            (bind,) = child.place.binds
            assert bind.target == isolation.ONE_PASS_MOUNT
            assert bind.source.parent == child.workdir
            assert (bind.source / "0123abcd" / "_partial_sums.cubin").read_bytes() == b"\x7fELF kernel"
            (bind.source / "0123abcd" / "_partial_sums.cubin").write_bytes(b"rewritten by the child")
        else:  # the reference processes' folder itself would be writable: no share at all
            assert child.shares == []
            assert child.place.binds == ()
    assert (source / "0123abcd" / "_partial_sums.cubin").read_bytes() == b"\x7fELF kernel"


def test_a_compile_pointed_at_a_folder_leaves_the_process_s_own_cache_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", "/home/worker/triton")
    with triton_cache(str(tmp_path)):
        assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path)
    assert os.environ["TRITON_CACHE_DIR"] == "/home/worker/triton"
    monkeypatch.delenv("TRITON_CACHE_DIR")
    with triton_cache(str(tmp_path)):
        assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path)
    assert "TRITON_CACHE_DIR" not in os.environ
    with triton_cache(None):
        assert "TRITON_CACHE_DIR" not in os.environ


def test_the_reference_process_compiles_it_into_that_folder_of_its_own_cache(compiled, monkeypatch):
    child = trusted_settings.reference_child(settings_with(compiled, monkeypatch, private=True), fds_fd=0)
    (share,) = child.shares
    assert share.source == compiled.baseline_dir()
    assert share.direct
    assert share.variables[ONE_PASS_CACHE_VARIABLE] == isolation.ONE_PASS_FOLDER
