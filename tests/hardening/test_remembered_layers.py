"""The sandbox layers kept for the next harnesses of the same boot: reused only when fresh, keyed and safe."""

import os
import sys
import time

import pytest

from evaluator.sandbox import cgroups, isolation, remembered


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALUATOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("EVALUATOR_SANDBOX_RECHECK_S", raising=False)
    isolation.detect.cache_clear()
    yield tmp_path / "cache"
    isolation.detect.cache_clear()


def no_probe(*args, **kwargs):
    raise AssertionError("probed although a finding was kept")


def example() -> isolation.Layers:
    hierarchy = cgroups.Hierarchy("memory", isolation.Path("/sys/fs/cgroup/kb"), 2)
    return isolation.Layers(
        unshare=("unshare", "-n"),
        init=True,
        new_root=True,
        user=True,
        landlock_abi=3,
        cgroups=(hierarchy,),
        absent={"tmpfs": "why not"},
    )


def test_layers_survive_the_file_unchanged():
    layers = isolation.Layers
    assert remembered.decode(remembered.encode(example()), layers) == example()
    assert remembered.decode(None, layers) is None
    assert remembered.decode({"unshare": 3}, layers) is None  # malformed: probed again


def test_a_second_harness_of_the_boot_skips_the_probes(cache, monkeypatch):
    first = isolation.detect(sys.executable)
    isolation.detect.cache_clear()
    if not isolation.cache_is_private(first):
        assert not (cache / remembered.FOLDER).exists()  # a candidate could reach it: never written
        return
    monkeypatch.setattr(isolation, "_probe", no_probe)
    assert isolation.detect(sys.executable) == first


def test_a_finding_is_not_trusted_when_stale_unkeyed_or_writable_by_others(cache, monkeypatch):
    key = {"boot": "b", "harness": "x"}
    remembered.save(key, remembered.encode(example()))
    assert remembered.decode(remembered.load(key), isolation.Layers) == example()
    assert remembered.load({**key, "harness": "y"}) is None  # another version, interpreter, boot, ...
    path = remembered.file_for(key)
    os.chmod(path, 0o622)
    assert remembered.load(key) is None  # others could have written it
    os.chmod(path, 0o600)
    os.chmod(path.parent, 0o777)
    assert remembered.load(key) is None
    os.chmod(path.parent, 0o700)
    monkeypatch.setenv("EVALUATOR_SANDBOX_RECHECK_S", "0.5")
    time.sleep(0.6)
    assert remembered.load(key) is None  # older than the recheck period


def test_a_recheck_period_of_zero_probes_every_time_and_keeps_nothing(cache, monkeypatch):
    monkeypatch.setenv("EVALUATOR_SANDBOX_RECHECK_S", "0")
    remembered.save({"k": 1}, {"layers": 1})
    assert not (cache / remembered.FOLDER).exists()
    calls = []
    probe = isolation._probe
    monkeypatch.setattr(isolation, "_probe", lambda *a, **k: calls.append(1) or probe(*a, **k))
    isolation.detect(sys.executable)
    assert calls  # probed
