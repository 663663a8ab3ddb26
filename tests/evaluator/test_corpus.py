"""The adversarial corpus through the whole harness on CPU: hacks are failed or flagged, honest kernels pass.

One batch evaluates the corpus (the batch path is what RQ jobs use); each row of the table checks one kernel.
"""

import json

import pytest

from tests.evaluator.conftest import KERNELS, RELU, SOFTMAX_WIDE, cpu_task, run_cli
from tests.evaluator.corpus import CORPUS as TABLE
from tests.evaluator.corpus import GPU_ONLY

pytestmark = pytest.mark.slow

CORPUS = {name: (cpu_task(*task), outcome, detail) for name, (task, outcome, detail) in TABLE.items()}
# The zeros kernel on a task where zeros pass KernelBench: failed by the signed-input trials.
EXTRA = {
    "softmax_wide_zeros": ("adv_constant_zeros", SOFTMAX_WIDE, "fail", "wrong_values"),
    "broken_syntax": ("broken_syntax", RELU, "fail", "compile_error"),
}
SYNTAX_ERROR = (
    "import torch.nn as nn\n\nclass ModelNew(nn.Module)\n    def forward(self, x):\n        return x\n"
)


@pytest.fixture(scope="module")
def corpus_results(tmp_path_factory, cache_dir):
    folder = tmp_path_factory.mktemp("corpus")
    kernels = [
        {"id": name, "task_path": str(task), "kernel_path": str(KERNELS / f"{name}.py")}
        for name, (task, _, _) in CORPUS.items()
    ]
    (folder / "broken_syntax.py").write_text(SYNTAX_ERROR)  # written here: the linter cannot parse it
    kernels += [
        {"id": key, "task_path": str(task), "kernel_path": str(folder / f"{name}.py")}
        if name == "broken_syntax"
        else {"id": key, "task_path": str(task), "kernel_path": str(KERNELS / f"{name}.py")}
        for key, (name, task, _, _) in EXTRA.items()
    ]
    manifest = folder / "manifest.json"
    options = {"baselines": ["eager"], "trials": 5, "run_timeout": 25}
    manifest.write_text(json.dumps({"device": "cpu", "mode": "hardened", "kernels": kernels, **options}))
    out = folder / "out"
    completed = run_cli(
        "batch", "--manifest", str(manifest), "--out", str(out), "--cache-dir", str(cache_dir)
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}


def test_every_corpus_file_is_in_the_table():
    files = {path.stem for path in KERNELS.glob("*.py")}
    assert files - GPU_ONLY == set(CORPUS)


def severe_flags(result):
    return {flag["code"] for flag in result["flags"] if flag["severity"] in ("suspect", "hack")}


@pytest.mark.parametrize("name", [*CORPUS, *EXTRA])
def test_corpus_verdict(corpus_results, name):
    expectation = CORPUS.get(name) or EXTRA[name][1:]
    _, outcome, detail = expectation
    result = corpus_results[name]
    hack_flags = {flag["code"] for flag in result["flags"] if flag["severity"] == "hack"}
    if outcome == "pass":
        assert result["correct"], result["error"]
        assert result["error"] is None
        assert severe_flags(result) == set(), result["flags"]
        assert result["speedup"]["eager"] > 0
        assert result["timing"]["note"] == "CPU timing, not a GPU verification"
    elif outcome == "fail":
        assert not result["correct"]
        kinds = detail if isinstance(detail, tuple) else (detail,)
        assert result["error"]["kind"] in kinds, result["error"]
        assert result["speedup"] == {"eager": None, "compile": None}
    elif outcome == "no_gain":
        assert result["timing"]["host_check"]["candidate_median_raised_by"] >= detail, result["timing"]
    else:
        if detail == "cpu_beside_timed_calls" and detail not in hack_flags and no_core_was_free(result):
            pytest.skip(f"no second core was free for the helper: {result['timing']['host_check']}")
        assert detail in hack_flags, result["flags"]


def no_core_was_free(result) -> bool:
    """Help in parallel needs a second core: on a host busy with other work the helper got none, its calls
    gained nothing, and there was nothing to flag (the rule itself is tested in test_kernel_cpu.py)."""
    check = result["timing"]["host_check"]
    return check["kernel_loop_cpu_ms"] <= 1.1 * check["kernel_loop_span_ms"]


def test_every_hack_is_failed_or_flagged(corpus_results):
    for name, result in corpus_results.items():
        if name == "adv_cpu_beside_calls" and no_core_was_free(result):
            continue
        if name in CORPUS and CORPUS[name][1] == "no_gain":
            continue  # judged by its own row: its claims were raised to the harness's clock
        if name.startswith(("adv_", "softmax")):
            assert not result["correct"] or any(f["severity"] == "hack" for f in result["flags"]), name


def test_the_crashes_did_not_affect_the_next_kernel(corpus_results):
    # crash_* ran before the honest kernels in manifest order? The batch evaluates in manifest order,
    # and honest kernels after every crash in CORPUS order still pass.
    assert corpus_results["crash_hang"]["error"]["message"].startswith("no answer within 25 s")
    assert "the limit for this task" in corpus_results["crash_hang"]["error"]["message"]
    assert corpus_results["honest_triton_relu"]["correct"]


def test_a_tiny_claimed_time_is_a_forgery_and_the_batch_goes_on(corpus_results):
    forged = corpus_results["adv_tiny_timing"]
    assert "implausible timing report" in forged["error"]["message"]
    assert "timing_forged" in {flag["code"] for flag in forged["flags"] if flag["severity"] == "hack"}
    assert set(CORPUS) <= set(corpus_results)  # every kernel after it has its result


def test_outputs_are_copied_when_forward_returns(corpus_results):
    # Filled 5 ms after forward returned: already wrong in the first trial, not only after timing.
    for name in ("adv_lazy_output", "adv_deferred_thread"):
        assert corpus_results[name]["correctness"]["trials"][0]["passed"] is False, name


def test_degenerate_tasks_carry_the_mark(corpus_results):
    assert corpus_results["honest_triton_relu"]["degenerate"] is True  # ReLU on [0, 1) inputs is the identity
    assert {c["name"]: c["passed"] for c in corpus_results["honest_triton_relu"]["canaries"]}["input"] is True
    assert corpus_results["honest_triton_matmul"]["degenerate"] is False
    assert corpus_results["softmax_wide_zeros"]["degenerate"] is True


def test_results_follow_the_schema(corpus_results):
    result = corpus_results["honest_triton_relu"]
    assert result["schema"] == 1
    assert set(result) >= {
        "harness_version",
        "mode",
        "device",
        "task",
        "kernel",
        "compiled",
        "correct",
        "error",
        "correctness",
        "runtime_ms",
        "baseline_ms",
        "speedup",
        "speedup_statistic",
        "timing",
        "flags",
        "degenerate",
        "canaries",
        "environment",
        "durations_s",
        "log",
    }
    assert set(result["runtime_ms"]) == {"median", "mean", "std", "iqr", "min", "max", "n", "samples"}
    assert result["runtime_ms"]["n"] == len(result["runtime_ms"]["samples"]) == 5
    assert result["speedup_statistic"] == "median"
    assert result["kernel"]["backend"] == "triton"
    assert result["task"]["level"] == 1
    assert result["task"]["problem_id"] == 9
    assert (
        result["correctness"]["passed"] == result["correctness"]["total"] == 9
    )  # 5 + 3 extra + 1 after timing
    orders = {trial["order"] for trial in result["correctness"]["trials"]}
    assert orders == {"candidate_first"}  # no reference ever runs in the kernel's process
    assert {trial["distribution"] for trial in result["correctness"]["trials"]} >= {
        "task",
        "signed",
        "heavy_tailed",
    }


def test_results_say_where_the_time_went(corpus_results):
    durations = corpus_results["honest_triton_relu"]["durations_s"]
    assert {"import_wait", "import_reply", "correctness_outputs", "correctness_relay"} <= set(durations)
    assert durations["correctness_outputs"] + durations["correctness_relay"] <= durations["correctness"]
    went = corpus_results["honest_triton_relu"]["timing"]["rounds_ms"]
    for side in ("candidate", "reference"):
        assert went[side]["claimed"] <= went[side]["loops"] <= went[side]["turns"]
        assert went[side]["reported_call"] >= went[side]["claimed"] * 0.99
    assert went["candidate"]["reported_check"] > 0


def test_what_a_kernel_printed_reaches_its_log_even_when_it_dies(corpus_results):
    assert "printed before the crash, without a flush" in corpus_results["crash_segfault"]["log"]


def test_a_kernel_error_s_first_line_names_it_and_its_line_without_a_path(corpus_results):
    syntax = corpus_results["broken_syntax"]["error"]["message"].splitlines()[0]
    assert syntax.startswith("SyntaxError: "), syntax
    assert syntax.endswith("(kernel line 3)"), syntax
    forward = corpus_results["broken_forward"]["error"]["message"].splitlines()[0]
    assert "(kernel line" in forward, forward
    assert "/" not in forward, forward


def test_inputs_changed_only_in_timed_calls_are_caught_there_by_the_reference_s_fingerprints(corpus_results):
    result = corpus_results["adv_mutate_input_timed_only"]
    assert result["error"]["kind"] == "mutated_input"
    assert "timed calls" in result["error"]["message"]
    assert "timed_call_violation" in {flag["code"] for flag in result["flags"]}


def test_the_new_classes_of_attack_are_each_caught_by_a_generic_rule(corpus_results):
    details = {
        name: {flag["code"]: flag["detail"] for flag in corpus_results[name]["flags"]}
        for name in (
            "adv_global_forward_hook", "adv_library_override", "adv_setprofile", "adv_function_mode",
            "adv_gc_callback",
        )
    }  # fmt: skip
    assert "_global_forward_hooks" in details["adv_global_forward_hook"]["state_left_behind"]
    assert "aten::relu" in details["adv_library_override"]["state_left_behind"]
    assert "sys.getprofile" in details["adv_setprofile"]["state_left_behind"]
    assert "gc.callbacks" in details["adv_gc_callback"]["state_left_behind"]
    timer = {flag["code"]: flag["detail"] for flag in corpus_results["adv_signal_timer"]["flags"]}
    assert "interval timers: 0 -> 1" in timer["state_left_behind"]
    audit = {flag["code"]: flag["detail"] for flag in corpus_results["adv_audit_hook"]["flags"]}
    assert "sys.addaudithook calls: 0 -> 1" in audit["state_left_behind"]
    assert "torch_function_modes" in details["adv_function_mode"]["state_left_behind"]
    assert any(
        "torch._C._nn.gelu" in flag["detail"] for flag in corpus_results["adv_c_submodule_patch"]["flags"]
    )
    # Nothing it does reaches the baselines: their process never imported it.
    for name in ("adv_global_forward_hook", "adv_library_override", "adv_c_submodule_patch"):
        assert corpus_results[name]["speedup"]["eager"] < 5, name
