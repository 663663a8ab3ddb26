"""GPU tests: the whole adversarial corpus on the full-size tasks, CUDA load_inline and Triton kernels, both
baselines in their own process, and the GPU-only hacks (side streams, deferred work, illegal memory).

Self-contained (no conftest fixtures) so they also run on a GPU host without Django:
    python -m pytest --noconftest -c bench/evaluator_gpu_pytest.ini tests/evaluator/test_gpu.py
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.evaluator.corpus import CORPUS, ON_GPU

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parent / "kernels"
TASKS = ROOT / "tasks" / "builtin"
RELU = TASKS / "level1" / "9_ReLU.py"
MATMUL = TASKS / "level1" / "1_Square_matrix_multiplication.py"
EPILOGUE = TASKS / "level2" / "8_Matmul_Divide_Clamp_Residual.py"
GPU_ROWS = {
    "honest_cuda_fused_epilogue": (EPILOGUE, "pass", None),
    "adv_side_stream": (MATMUL, "flag", "side_stream"),
    "adv_illegal_memory": (RELU, "fail", "runtime_error"),
    "adv_move_timing_thread": (RELU, "flag", "state_left_behind"),
    "adv_core_there_and_back": (RELU, "flag", "state_left_behind"),
}


def full_size(level: int, name: str) -> Path:
    return TASKS / f"level{level}" / f"{name}.py"


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """$EVALUATOR_CACHE_DIR when set (builds made ahead with `batch --compile-only`), else a fresh one."""
    shared = os.environ.get("EVALUATOR_CACHE_DIR")
    return Path(shared) if shared else tmp_path_factory.mktemp("gpu-cache")


def batch(folder: Path, cache: Path, entries: list[dict], **options) -> dict:
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps({"device": "cuda", "mode": "hardened", "kernels": entries, **options}))
    command = [sys.executable, "-m", "evaluator", "batch", "--manifest", str(manifest)]
    command += ["--out", str(folder / "out"), "--cache-dir", str(cache)]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1500, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = {path.stem: json.loads(path.read_text()) for path in (folder / "out").glob("*.json")}
    results.pop("environment", None)
    return results


# GPU_CORPUS=all runs every row of the CPU corpus on the GPU too; by default, the honest rows and those whose
# outcome depends on the device (CUDA, streams, memory, timing, the state a kernel leaves in its process).
DEVICE_ROWS = (
    "honest_", "adv_stale_memory", "adv_cache_by_pointer", "adv_cache_by_identity", "adv_precision_flags",
    "adv_tiny_timing", "adv_lazy_output", "adv_near_canary", "adv_global_forward_hook",
    "adv_library_override", "adv_c_submodule_patch", "adv_swap_samples", "adv_function_mode",
    "adv_setprofile", "adv_gc_callback", "adv_signal_timer", "adv_audit_hook", "adv_fresh_round_zeros",
    "adv_identity_timed_only", "adv_mutate_input_timed_only", "adv_return_input", "crash_hang",
    "adv_seed_hook", "adv_cpu_while_baselines", "adv_cpu_beside_calls", "adv_rewrite_records",
    "adv_timed_only_drift", "adv_pipe_takeover", "adv_code_swap", "adv_module_class_swap",
    "adv_class_bases_swap", "adv_known_seeds", "adv_stdlib_patch",
)  # fmt: skip


def expectations() -> dict:
    everything = os.environ.get("GPU_CORPUS") == "all"
    rows = {
        name: (full_size(*task), *ON_GPU.get(name, (outcome, detail)))
        for name, (task, outcome, detail) in CORPUS.items()
        if everything or name.startswith(DEVICE_ROWS)
    }
    return {**rows, **GPU_ROWS}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, cache_dir):
    """Every corpus kernel on its full-size task, in one batch (eager baseline; 30 s a stage at most)."""
    entries = [
        {"id": name, "task_path": str(task), "kernel_path": str(KERNELS / f"{name}.py")}
        for name, (task, _, _) in expectations().items()
    ]
    folder = (
        Path(os.environ["GPU_TESTS_OUT"])
        if os.environ.get("GPU_TESTS_OUT")
        else tmp_path_factory.mktemp("corpus")
    )
    folder.mkdir(parents=True, exist_ok=True)  # GPU_TESTS_OUT keeps every result, even of a batch cut short
    return batch(folder, cache_dir, entries, baselines=["eager"], run_timeout=30)


def severe(result: dict) -> set[str]:
    return {flag["code"] for flag in result["flags"] if flag["severity"] in ("suspect", "hack")}


def hacks(result: dict) -> set[str]:
    return {flag["code"] for flag in result["flags"] if flag["severity"] == "hack"}


@pytest.mark.parametrize("name", list(expectations()))
def test_corpus_verdict_on_the_gpu(corpus, name):
    _, outcome, detail = expectations()[name]
    result = corpus[name]
    if outcome == "pass":
        assert result["correct"], result["error"]
        assert severe(result) == set(), result["flags"]
        assert result["timing"]["method"] == "cuda_event"
    elif outcome == "fail":
        assert not result["correct"]
        assert result["error"]["kind"] == detail, result["error"]
    elif detail == "side_stream":
        assert "side_stream" in severe(result), result["flags"]
        assert "deferred_work" in hacks(result) or not result["correct"] or result["speedup"]["eager"] < 2
    else:
        assert detail in hacks(result), result["flags"]


def test_the_honest_kernels_speedups_are_plausible(corpus):
    assert 0.3 < corpus["honest_triton_relu"]["speedup"]["eager"] < 3
    assert 0.8 < corpus["honest_cuda_fused_epilogue"]["speedup"]["eager"] < 5
    matmul = corpus["honest_torch_matmul"]
    assert 0.9 < matmul["speedup"]["eager"] < 1.1  # the same cuBLAS call, in two processes
    assert "pytorch_only" in {flag["code"] for flag in matmul["flags"]}


def test_every_result_has_its_memory_peaks_and_limits(corpus):
    result = corpus["honest_triton_relu"]
    peaks = result["resources"]["peak"]
    assert peaks["kernel"]["gpu_reserved_bytes"] > 0
    assert peaks["reference"]["gpu_reserved_bytes"] > 0
    assert result["limits"]["call_s"] < result["limits"]["first_call_s"] <= 600
    assert result["timing"]["host_check"]["calibrated_eager_ms"] > 0


def test_a_spinning_kernel_is_stopped_at_its_scaled_limit(corpus):
    hang = corpus["crash_hang"]
    assert hang["error"]["kind"] == "timeout"
    assert hang["durations_s"]["total"] < 90  # the stage cap of this batch (30 s), not the default 600 s


def test_the_compile_baseline_runs_in_the_reference_process(tmp_path, cache_dir):
    entries = [
        {
            "id": "epilogue",
            "task_path": str(EPILOGUE),
            "kernel_path": str(KERNELS / "honest_cuda_fused_epilogue.py"),
        }
    ]
    result = batch(tmp_path, cache_dir, entries, baselines=["eager", "compile"])["epilogue"]
    assert result["correct"], result["error"]
    assert severe(result) == set(), result["flags"]
    assert result["speedup"]["compile"] is not None
    assert result["speedup"]["compile"] > 0.3
    assert result["baseline_ms"]["compile"]["n"] == result["runtime_ms"]["n"] >= 100
