"""GPU tests: CUDA load_inline and Triton kernels, and the GPU-only hacks (side streams, deferred work).

Self-contained (no conftest fixtures) so they also run on a GPU host without Django:
    python -m pytest --noconftest -c bench/evaluator_gpu_pytest.ini tests/evaluator/test_gpu.py
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
SOFTMAX_WIDE = TASKS / "level1" / "3_Softmax_wide.py"
# The harness 1.2 corpus rows on the full-size tasks: (task, expected) as in test_corpus.py.
HARNESS_1_2 = {
    "adv_tiny_timing": (RELU, "fail", "sandbox_violation"),
    "adv_task_get_inputs": (MATMUL, "flag", "task_patched"),
    "adv_slow_reference": (MATMUL, "flag", "task_patched"),
    "honest_static_output_buffer": (RELU, "pass", None),
    "adv_lazy_output": (RELU, "fail", "wrong_values"),
    "adv_layout_poison": (RELU, "fail", "mutated_input"),
    "adv_near_canary": (SOFTMAX_WIDE, "flag", "null_output"),
}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """$EVALUATOR_CACHE_DIR when set (builds made ahead with `batch --compile-only`), else a fresh one."""
    shared = os.environ.get("EVALUATOR_CACHE_DIR")
    return Path(shared) if shared else tmp_path_factory.mktemp("gpu-cache")


def evaluate(task: Path, kernel: str, out_dir: Path, cache: Path, baselines: str = "eager") -> dict:
    out = out_dir / f"{kernel}.json"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator",
            "run",
            "--task",
            str(task),
            "--kernel",
            str(KERNELS / f"{kernel}.py"),
            "--device",
            "cuda",
            "--baselines",
            baselines,
            "--cache-dir",
            str(cache),
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(out.read_text())


def severe(result: dict) -> set[str]:
    return {flag["code"] for flag in result["flags"] if flag["severity"] in ("suspect", "hack")}


def hacks(result: dict) -> set[str]:
    return {flag["code"] for flag in result["flags"] if flag["severity"] == "hack"}


def test_honest_cuda_kernel_is_correct_with_a_plausible_speedup(tmp_path, cache_dir):
    result = evaluate(EPILOGUE, "honest_cuda_fused_epilogue", tmp_path, cache_dir, "eager,compile")
    assert result["correct"], result["error"]
    assert result["kernel"]["backend"] == "cuda"
    assert severe(result) == set(), result["flags"]
    assert result["timing"]["method"] == "cuda_event"
    assert result["runtime_ms"]["n"] >= 100
    assert 0.8 < result["speedup"]["eager"] < 5
    assert result["speedup"]["compile"] is not None
    assert result["speedup"]["compile"] > 0.3
    assert result["environment"]["gpu"]["name"]


def test_honest_triton_kernel_is_correct(tmp_path, cache_dir):
    result = evaluate(RELU, "honest_triton_relu", tmp_path, cache_dir)
    assert result["correct"], result["error"]
    assert severe(result) == set(), result["flags"]
    assert 0.3 < result["speedup"]["eager"] < 3


def test_pytorch_only_kernel_is_a_track_not_a_hack(tmp_path, cache_dir):
    result = evaluate(MATMUL, "honest_torch_matmul", tmp_path, cache_dir)
    assert result["correct"]
    assert "pytorch_only" in {flag["code"] for flag in result["flags"]}
    assert severe(result) == set()


def test_side_stream_work_is_counted_and_deferred_work_flagged(tmp_path, cache_dir):
    result = evaluate(MATMUL, "adv_side_stream", tmp_path, cache_dir)
    assert "side_stream" in severe(result)
    assert "deferred_work" in hacks(result) or not result["correct"]
    if result["correct"]:
        # the device-wide sync before the end event counts the side stream: no fake 60x speedup
        assert result["speedup"]["eager"] < 2


def test_stale_memory_is_poisoned(tmp_path, cache_dir):
    result = evaluate(RELU, "adv_stale_memory", tmp_path, cache_dir)
    assert not result["correct"]
    assert result["error"]["kind"] in ("nan_inf", "wrong_values")


def test_pointer_cache_is_flagged(tmp_path, cache_dir):
    result = evaluate(RELU, "adv_cache_by_pointer", tmp_path, cache_dir)
    assert not result["correct"] or "timed_output_mismatch" in hacks(result)


def test_precision_flags_are_flagged(tmp_path, cache_dir):
    result = evaluate(MATMUL, "adv_precision_flags", tmp_path, cache_dir)
    assert "precision_flags_changed" in hacks(result)


def test_illegal_memory_access_fails_only_that_kernel(tmp_path, cache_dir):
    bad = evaluate(RELU, "adv_illegal_memory", tmp_path, cache_dir)
    assert not bad["correct"]
    assert bad["error"]["kind"] in ("runtime_error", "crash")
    good = evaluate(RELU, "honest_cuda_relu", tmp_path, cache_dir)
    assert good["correct"], good["error"]


@pytest.fixture(scope="module")
def harness_1_2_results(tmp_path_factory, cache_dir):
    folder = tmp_path_factory.mktemp("harness-1-2")
    kernels = [
        {"id": name, "task_path": str(task), "kernel_path": str(KERNELS / f"{name}.py")}
        for name, (task, _, _) in HARNESS_1_2.items()
    ]
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps({"device": "cuda", "mode": "hardened", "kernels": kernels}))
    command = [sys.executable, "-m", "evaluator", "batch", "--manifest", str(manifest)]
    command += ["--out", str(folder / "out"), "--cache-dir", str(cache_dir)]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return {path.stem: json.loads(path.read_text()) for path in (folder / "out").glob("*.json")}


@pytest.mark.parametrize("name", HARNESS_1_2)
def test_harness_1_2_corpus_rows_hold_on_the_gpu(harness_1_2_results, name):
    _, outcome, detail = HARNESS_1_2[name]
    result = harness_1_2_results[name]
    if outcome == "pass":
        assert result["correct"], result["error"]
        assert severe(result) == set(), result["flags"]
        assert result["timing"]["method"] == "cuda_event"
    elif outcome == "fail":
        assert not result["correct"]
        assert result["error"]["kind"] == detail, result["error"]
    else:
        assert detail in hacks(result), result["flags"]
