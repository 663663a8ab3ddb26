"""The sandbox on a GPU host: CUDA, Triton and load_inline work inside every layer, the escapes of the CPU
suite are contained there too, GPU memory far beyond the device fails only that kernel, and the harness's
clock catches a forged timing report.

No Django and no conftest, so the GPU host runs it as it is:
    python -m pytest --noconftest -c tests/hardening/gpu_pytest.ini --rootdir . -m gpu tests/hardening
Set HARDENING_GPU_OUT to a folder to keep every result JSON there (for docs/gpu-validation.md).
"""

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.hardening.harness import ESCAPED, ROOT, entry, hacks, run_batch, sandbox_report, severe, task
from tests.hardening.test_escapes import ESCAPES, active_layers

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

RELU = task(1, "9_ReLU", device="cuda")
EPILOGUE = task(2, "8_Matmul_Divide_Clamp_Residual", device="cuda")
EVALUATOR_KERNELS = ROOT / "tests" / "evaluator" / "kernels"
# The CPU suite's escapes that mean the same on a GPU host (host memory creep has its own test below).
GPU_ESCAPES = {
    "esc_redis_loopback": "sandbox_violation",
    "esc_postgres_loopback": "sandbox_violation",
    "esc_postgres_unix_socket": None,
    "esc_network_interfaces": "compile_error",
    "esc_read_secrets": "sandbox_violation",
    "esc_read_settings": None,
    "esc_write_outside": "sandbox_violation",
    "esc_fork_bomb": "resource_limit",
    "esc_memory_huge": "resource_limit",
    "esc_spin_forever": "timeout",
    "esc_segfault": "crash",
    "esc_exit_early": "crash",
    "esc_fake_results": "sandbox_violation",
    "esc_tamper_harness": "sandbox_violation",
    "esc_chunk_out_of_range": "sandbox_violation",
    "esc_chunk_oversized": "sandbox_violation",
    "esc_fill_temp_dir": "resource_limit",
}
OPTIONS = {"baselines": ["eager"], "trials": 20, "run_timeout": 60, "max_tasks": 512, "temp_dir_mb": 4096}
LIMIT_KEYS = ("memory_limit_mb", "max_tasks", "temp_dir_mb")


def keep(results: dict, name: str) -> None:
    folder = os.environ.get("HARDENING_GPU_OUT")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.json").write_text(json.dumps(results, indent=1))


def evaluator_kernel(name: str, task_path: Path) -> dict:
    return {"id": name, "task_path": str(task_path), "kernel_path": str(EVALUATOR_KERNELS / f"{name}.py")}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """$EVALUATOR_CACHE_DIR when set (builds made ahead with `batch --compile-only`), else a fresh one."""
    shared = os.environ.get("EVALUATOR_CACHE_DIR")
    return Path(shared) if shared else tmp_path_factory.mktemp("gpu-hardening-cache")


def batch(folder: Path, cache: Path, entries: list[dict], **options) -> dict:
    shutil.copytree(cache, folder / "cache", dirs_exist_ok=True)
    completed, results = run_batch(folder, entries, device="cuda", **{**OPTIONS, **options})
    assert completed.returncode == 0, completed.stderr[-4000:]
    shutil.copytree(folder / "cache", cache, dirs_exist_ok=True)
    return results


def test_the_layers_on_this_gpu_host_are_reported():
    report = sandbox_report("cuda")
    keep({"sandbox": report}, "sandbox_report")
    for layer in ("network_namespace", "pid_namespace_init", "filesystem_isolation", "unprivileged_user"):
        assert report[layer] or report["absent"], layer  # on, or its absence explained


def test_cuda_triton_and_load_inline_work_inside_the_sandbox(tmp_path, cache):
    entries = [
        entry("gpu_probe_sandbox", RELU),
        evaluator_kernel("honest_triton_relu", RELU),
        evaluator_kernel("honest_cuda_fused_epilogue", EPILOGUE),
    ]
    first = batch(tmp_path / "first", cache, entries)
    again = batch(tmp_path / "again", cache, entries[2:])  # the build comes from the cache this time
    keep({**first, "cached_epilogue": again["honest_cuda_fused_epilogue"]}, "honest")
    for name, result in [*first.items(), ("cached", again["honest_cuda_fused_epilogue"])]:
        assert result["correct"], (name, result["error"])
        assert severe(result) == set(), (name, result["flags"])
    probe = next(line for line in first["gpu_probe_sandbox"]["log"].splitlines() if line.startswith("PROBE"))
    assert "cuda=True" in probe
    sandbox = first["gpu_probe_sandbox"]["environment"]["sandbox"]
    if sandbox["unprivileged_user"]:
        assert "uid=0 " not in probe
    if sandbox["filesystem_isolation"]:
        assert "settings_visible=False" in probe


def test_the_cpu_escapes_are_contained_on_the_gpu_host(tmp_path, cache):
    limits = {**OPTIONS, "memory_limit_mb": 32768}
    layers = active_layers(sandbox_report("cuda", **{k: v for k, v in limits.items() if k in LIMIT_KEYS}))
    usable = {name: kind for name, kind in GPU_ESCAPES.items() if ESCAPES[name][2] in (None, *layers)}
    entries = [entry(name, RELU) for name in usable] + [entry("honest_relu", RELU)]
    results = batch(tmp_path, cache, entries, memory_limit_mb=32768)
    keep(results, "escapes")
    for name, kind in usable.items():
        result = results[name]
        assert ESCAPED not in result["log"], (name, result["log"][-2000:])
        assert not result["correct"], name
        if kind:
            assert result["error"]["kind"] == kind, (name, result["error"])
    assert results["honest_relu"]["correct"], results["honest_relu"]["error"]


def test_gpu_memory_far_beyond_the_device_fails_only_that_kernel(tmp_path, cache):
    names = ["gpu_memory_huge", "honest_relu", "gpu_memory_creep", "honest_relu_after"]
    entries = [entry(name, RELU, name.removesuffix("_after")) for name in names]
    results = batch(tmp_path, cache, entries)
    keep(results, "gpu_memory")
    for name in ("gpu_memory_huge", "gpu_memory_creep"):
        assert results[name]["error"]["kind"] == "resource_limit", results[name]["error"]
        assert "stopped by a memory limit" in results[name]["error"]["message"]
    for name in ("honest_relu", "honest_relu_after"):
        assert results[name]["correct"], results[name]["error"]


def test_host_memory_creep_is_stopped_on_the_gpu_host(tmp_path, cache):
    """By the cgroup where the host has one, else by the harness's watch of the process tree."""
    entries = [entry("esc_memory_creep", RELU), entry("honest_relu", RELU)]
    results = batch(tmp_path, cache, entries, memory_limit_mb=4096)
    keep(results, "host_memory")
    creep = results["esc_memory_creep"]["error"]
    assert creep["kind"] == "resource_limit", creep
    assert "host memory limit of 4.0 GiB" in creep["message"], creep
    assert results["honest_relu"]["correct"], results["honest_relu"]["error"]  # CUDA fits in 4 GiB of host


def test_forged_timing_reports_are_flagged_on_the_gpu(tmp_path, cache):
    names = ["adv_forge_timing", "adv_inflate_baseline", "adv_content_cache", "honest_relu"]
    results = batch(tmp_path, cache, [entry(name, RELU) for name in names])
    keep(results, "timing")
    assert "timing_forged" in severe(results["adv_forge_timing"]), results["adv_forge_timing"]["flags"]
    assert "timing_forged" in hacks(results["adv_inflate_baseline"]), results["adv_inflate_baseline"]["flags"]
    assert results["adv_content_cache"]["speedup"]["eager"] < 1
    assert severe(results["honest_relu"]) == set(), results["honest_relu"]["flags"]
