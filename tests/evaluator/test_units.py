"""Unit tests of the harness's parts: statistics, policy, sources, flags, fingerprints, results, cache."""

import json
import math

import pytest
import torch

from evaluator import HARNESS_VERSION
from evaluator.child import candidate, fingerprint
from evaluator.policy import BUDGETS, make_policy
from evaluator.result import ErrorInfo, Flag, Result, truncate_log, writable, write_json_atomic
from evaluator.sandbox.process import scrubbed_environment
from evaluator.sources import kernel_backend, kernelbench_hash, task_identity
from evaluator.stats import speedup, summarize
from evaluator.trusted.compile_cache import CompileCache
from evaluator.trusted.conversation import Stop
from evaluator.trusted.evaluate import import_around, import_stages
from evaluator.trusted.flags import apply_integrity_flags, apply_timing_flags, roofline_floor_ms, static_flags
from evaluator.trusted.speed import reject_implausible_samples, timing_info
from tests.evaluator.conftest import KERNELS


def test_summarize_reports_every_statistic_and_keeps_samples():
    stats = summarize([4.0, 1.0, 3.0, 2.0])
    assert stats["median"] == 2.5
    assert stats["mean"] == 2.5
    assert stats["min"] == 1.0
    assert stats["max"] == 4.0
    assert stats["iqr"] == pytest.approx(1.5)
    assert stats["std"] == pytest.approx(math.sqrt(1.25))
    assert stats["n"] == 4
    assert stats["samples"] == [4.0, 1.0, 3.0, 2.0]


def test_summarize_refuses_no_samples():
    with pytest.raises(ValueError, match="no timing samples"):
        summarize([])


def test_speedup_is_baseline_over_kernel_with_the_chosen_statistic():
    kernel, baseline = summarize([1.0, 1.0, 4.0]), summarize([2.0, 2.0, 2.0])
    assert speedup(baseline, kernel, "median") == 2.0
    assert speedup(baseline, kernel, "mean") == 1.0
    assert speedup(None, kernel, "median") is None
    assert speedup(summarize([1e308]), summarize([1e-300]), "median") is None  # not finite: no speedup


def test_claimed_times_outside_what_a_call_can_take_fail_as_forged():
    result = Result(mode="hardened", device="cpu", task={}, kernel={})
    reject_implausible_samples(result, [0.2, 0.3], "cpu", 600.0)
    assert result.error is None
    with pytest.raises(Stop) as stop:
        reject_implausible_samples(result, [0.2, 5e-324], "cpu", 600.0)
    assert stop.value.kind == "sandbox_violation"
    assert [(flag.code, flag.severity) for flag in result.flags] == [("timing_forged", "hack")]
    with pytest.raises(Stop):
        reject_implausible_samples(Result("hardened", "cpu", {}, {}), [1e300], "cpu", 600.0)
    with pytest.raises(Stop):  # below the resolution of CUDA events
        reject_implausible_samples(Result("hardened", "cuda", {}, {}), [1e-5], "cuda", 600.0)


def test_a_result_that_is_not_valid_json_is_written_as_a_harness_error():
    result = Result(mode="hardened", device="cpu", task={"name": "t"}, kernel={"sha256": "x"}, log="out")
    assert writable(result) is result
    result.correct = True
    result.speedup["eager"] = math.inf
    fallback = writable(result)
    assert fallback.error.kind == "harness_error"
    assert "cannot be written as JSON" in fallback.error.message
    payload = json.loads(json.dumps(fallback.to_dict(), allow_nan=False))
    assert (payload["task"], payload["kernel"], payload["log"]) == ({"name": "t"}, {"sha256": "x"}, "out")
    assert payload["speedup"] == {"eager": None, "compile": None}


def test_changes_to_the_task_are_their_own_hack_flag():
    result = Result(mode="hardened", device="cpu", task={}, kernel={})
    apply_integrity_flags(result, {"functions_replaced": ["kb_task.get_inputs", "torch.relu"]})
    flags = {flag.code: (flag.severity, flag.detail) for flag in result.flags}
    assert flags["task_patched"][0] == flags["torch_patched"][0] == "hack"
    assert "kb_task.get_inputs" in flags["task_patched"][1]
    assert "kb_task" not in flags["torch_patched"][1]


def test_state_left_behind_is_one_hack_flag_naming_each_piece():
    result = Result(mode="hardened", device="cpu", task={}, kernel={})
    report = {
        "hooks": ["_global_forward_hooks: 0 -> 1", "sys.getprofile: False -> True"],
        "thread_settings": ["torch.get_num_threads: 1 -> 8"],
        "operators_overridden": ["aten::relu"],
        "new_threads": 0,
    }
    apply_integrity_flags(result, report)
    (flag,) = result.flags
    assert (flag.code, flag.severity) == ("state_left_behind", "hack")
    for piece in ("_global_forward_hooks", "sys.getprofile", "get_num_threads", "aten::relu"):
        assert piece in flag.detail


def test_kernelbench_s_trial_seeds_are_its_recipe_s():
    from evaluator.child.inputs import kernelbench_trial_seeds
    from evaluator.policy import KERNELBENCH_TRIAL_SEEDS

    assert tuple(kernelbench_trial_seeds(5)) == KERNELBENCH_TRIAL_SEEDS
    torch.manual_seed(42)
    assert [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(5)] == list(KERNELBENCH_TRIAL_SEEDS)


def test_kernelbench_mode_reproduces_its_numbers():
    policy = make_policy("kernelbench", "cuda")
    assert policy.tolerance == 1e-4
    assert policy.kernelbench_trials == 5
    assert policy.extra_trials == ()
    plan = policy.timing
    assert (plan.trials, plan.warmup, plan.baseline_warmup, plan.discard_first) == (100, 3, 3, 1)
    assert plan.compile_warmup == 5
    assert plan.statistic == "mean"
    assert not plan.interleaved
    assert not plan.fresh_inputs
    assert not plan.device_sync_before_end
    assert plan.l2_flush
    assert make_policy("kernelbench", "cuda", tolerance="v0.1").tolerance == 1e-2


def test_hardened_mode_interleaves_rotates_and_syncs():
    policy = make_policy("hardened", "cuda")
    plan = policy.timing
    assert plan.trials >= 100
    assert plan.interleaved
    assert plan.fresh_inputs
    assert plan.trials > plan.round_calls >= plan.min_round_calls > 1
    assert plan.calibration_calls > 0
    assert plan.device_sync_before_end
    assert plan.statistic == "round_pairs"
    assert make_policy("hardened", "cpu").timing.statistic == "median"
    assert policy.candidate_first
    assert policy.check_inputs
    assert policy.poison_memory
    assert {name for name, _ in policy.extra_trials} == {"signed", "heavy_tailed"}
    assert make_policy("hardened", "cpu").timing.l2_flush is False


def test_a_result_records_the_round_size_hardened_timing_alternated_at():
    assert timing_info(make_policy("hardened", "cuda"), 100).round_calls == 20
    assert timing_info(make_policy("hardened", "cpu"), 10).round_calls == 5
    assert timing_info(make_policy("kernelbench", "cuda"), 100).round_calls is None


@pytest.mark.parametrize(
    ("args", "message"),
    [(("fast", "cpu"), "unknown mode"), (("hardened", "tpu"), "unknown device")],
)
def test_unknown_policy_names_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        make_policy(*args)


def test_call_limits_scale_with_the_eager_time_and_stop_at_the_cap():
    budget = BUDGETS["cuda"]
    assert budget.call_limit(1.0, 600) == pytest.approx(50 * 1e-3 + budget.per_call_margin_s)
    assert budget.call_limit(None, 600) == budget.per_call_margin_s
    assert budget.call_limit(60_000.0, 600) == 600
    assert budget.first_limit(1.0, 600) == pytest.approx(budget.first_call_s + budget.call_limit(1.0, 600))
    assert budget.transfer_limit(10**9, 600) == pytest.approx(10**9 / budget.transfer_bytes_per_s + 2.0)


def test_unknown_baseline_is_refused():
    with pytest.raises(ValueError, match="unknown baselines"):
        make_policy("hardened", "cpu", baselines=("eager", "tensorrt"))


def test_kernelbench_hash_ignores_comments_docstrings_and_whitespace():
    base = "import torch\nclass Model:\n    def f(self):\n        return 1\n"
    noisy = '"""doc"""\nimport torch   # a comment\n\nclass Model:\n    def f(self):\n\n        return 1\n'
    assert kernelbench_hash(base) == kernelbench_hash(noisy)
    assert kernelbench_hash(base) != kernelbench_hash(base.replace("1", "2"))
    assert len(kernelbench_hash(base)) == 32


def test_task_identity_reads_level_id_and_name_from_the_path(tmp_path):
    path = tmp_path / "level2" / "12_Gemm_Multiply_LeakyReLU.py"
    identity = task_identity(path, "x = 1")
    assert (identity["level"], identity["problem_id"], identity["name"]) == (
        2,
        12,
        "12_Gemm_Multiply_LeakyReLU",
    )
    cpu = task_identity(tmp_path / "level1" / "cpu" / "19_ReLU_.py", "")
    assert (cpu["level"], cpu["problem_id"], cpu["name"]) == (1, 19, "19_ReLU_")
    assert task_identity(tmp_path / "anything.py", "")["level"] is None


@pytest.mark.parametrize(
    ("name", "backend"),
    [("honest_cuda_relu", "cuda"), ("honest_triton_relu", "triton"), ("honest_torch_matmul", "torch")],
)
def test_backend_is_detected_from_the_source(name, backend):
    assert kernel_backend((KERNELS / f"{name}.py").read_text()) == backend


@pytest.mark.parametrize(
    "name", ["honest_cuda_relu", "honest_triton_relu", "honest_triton_matmul", "honest_torch_matmul"]
)
def test_honest_kernels_match_no_suspect_static_rule(name):
    found = static_flags((KERNELS / f"{name}.py").read_text())
    assert [code for code, severity, _ in found if severity != "info"] == []


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("adv_side_stream", "side_stream"),
        ("adv_deferred_thread", "threads"),
        ("adv_frame_walk", "introspection"),
        ("adv_monkeypatch_torch", "torch_patched"),
        ("adv_precision_flags", "precision_flags_changed"),
    ],
)
def test_static_rules_catch_the_obvious_hacks(name, code):
    assert code in {found[0] for found in static_flags((KERNELS / f"{name}.py").read_text())}


@pytest.mark.parametrize(
    ("streams", "reference", "flagged"), [(3, 3, False), (1, 1, False), (4, 3, True), (2, 1, True)]
)
def test_side_streams_count_against_the_reference_forwards_own(streams, reference, flagged):
    result = Result(mode="hardened", device="cuda", task={}, kernel={})
    apply_timing_flags(result, {"streams": streams, "reference_streams": reference}, io_bytes=0)
    codes = {flag.code: flag.severity for flag in result.flags}
    assert ("side_stream" in codes) is flagged
    if flagged:
        assert codes["side_stream"] == "suspect"


def test_roofline_floor_uses_the_gpu_bandwidth():
    assert roofline_floor_ms("NVIDIA H200", int(4.8e9)) == pytest.approx(1.0)
    assert roofline_floor_ms("Some CPU", 10**9) is None


def test_fingerprint_matches_itself_and_rejects_changes():
    torch.manual_seed(0)
    tensor = torch.rand(64, 512)
    expected = fingerprint.fingerprint(tensor, 7)
    numel = tensor.numel()
    assert fingerprint.matches(fingerprint.fingerprint(tensor.clone(), 7), expected, numel, 1e-4)
    assert fingerprint.matches(fingerprint.fingerprint(tensor * (1 + 1e-5), 7), expected, numel, 1e-4)
    assert not fingerprint.matches(
        fingerprint.fingerprint(torch.zeros_like(tensor), 7), expected, numel, 1e-4
    )
    assert not fingerprint.matches(fingerprint.fingerprint(torch.rand(64, 512), 7), expected, numel, 1e-4)
    nan = tensor.clone()
    nan[3, 3] = float("nan")
    assert not fingerprint.matches(fingerprint.fingerprint(nan, 7), expected, numel, 1e-4)
    assert fingerprint.fingerprint(tensor.to_sparse(), 7) == [math.nan] or math.isnan(
        fingerprint.fingerprint(tensor.to_sparse(), 7)[0]
    )


def test_the_projection_catches_a_scattered_error_the_sums_miss():
    torch.manual_seed(1)
    tensor = torch.randn(1 << 20)
    wrong = tensor.clone()
    wrong[::100] *= 3  # 1 % of the elements wrong: the sums and the norm move by less than their slack
    seeds = range(8)
    caught = sum(
        not fingerprint.matches(
            fingerprint.fingerprint(wrong, s), fingerprint.fingerprint(tensor, s), wrong.numel(), 1e-4
        )
        for s in seeds
    )
    assert caught == len(seeds)


def test_a_fingerprint_built_chunk_by_chunk_is_the_whole_tensor_s():
    tensor = torch.randn(3 * fingerprint.BLOCK + 12_345)
    whole = fingerprint.fingerprint(tensor, 11)
    for step in (fingerprint.BLOCK, 1_000_003, 4_096 * 999):
        accumulator = fingerprint.Accumulator(tensor.numel(), 11, "cpu")
        for offset in range(0, tensor.numel(), step):
            accumulator.update(tensor[offset : offset + step], offset)
        assert fingerprint.identical(whole, accumulator.value()), step
    assert not fingerprint.identical(whole, fingerprint.fingerprint(tensor, 12))


def test_result_json_has_the_schema_and_no_nan(tmp_path):
    result = Result(mode="hardened", device="cpu", task={"name": "t"}, kernel={"backend": "torch"})
    result.fail("wrong_values", "differs")
    result.add_flag("pytorch_only", "info", "x")
    result.add_flag("pytorch_only", "info", "again")
    payload = result.to_dict()
    assert payload["schema"] == 1
    assert payload["harness_version"] == HARNESS_VERSION
    assert payload["error"] == {"kind": "wrong_values", "message": "differs"}
    assert len(payload["flags"]) == 1
    write_json_atomic(tmp_path / "r.json", payload)
    assert json.loads((tmp_path / "r.json").read_text())["correct"] is False
    assert [path.name for path in tmp_path.iterdir()] == ["r.json"]


def test_result_refuses_unknown_kinds_and_severities():
    with pytest.raises(ValueError, match="unknown error kind"):
        ErrorInfo("oops", "")
    with pytest.raises(ValueError, match="unknown flag severity"):
        Flag("x", "fatal", "")


def test_first_failure_wins():
    result = Result(mode="hardened", device="cpu", task={}, kernel={})
    result.fail("mutated_input", "first").fail("wrong_values", "second")
    assert result.error.kind == "mutated_input"


def test_long_logs_keep_head_and_tail():
    text = "a" * 30_000 + "END"
    cut = truncate_log(text, limit=1000)
    assert len(cut) < 1100
    assert cut.endswith("END")
    assert "characters cut" in cut


def test_child_environment_is_an_allow_list(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://secret")
    monkeypatch.setenv("SECRET_KEY", "s3cret")
    monkeypatch.setenv("TRITON_PRINT_AUTOTUNING", "1")
    monkeypatch.setenv("TRITON_CACHE_DIR", "/tmp/shared-triton")
    env = scrubbed_environment(tmp_path, {"TRITON_INTERPRET": "1"})
    assert "DATABASE_URL" not in env
    assert "SECRET_KEY" not in env
    assert env["HOME"] == env["TMPDIR"] == str(tmp_path)
    assert env["TRITON_INTERPRET"] == env["TRITON_PRINT_AUTOTUNING"] == "1"
    # Compile caches are the child's own: no kernel shares a Triton or inductor cache with another.
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "triton")
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "inductor")


def test_compile_cache_notices_a_tampered_build(tmp_path):
    cache = CompileCache(tmp_path)
    folder = cache.prepare("ab" * 32)
    (folder / "ext.so").write_bytes(b"built")
    (folder / ".ninja_log").write_text("changes on every load")
    assert not cache.is_built("ab" * 32)
    cache.mark_built("ab" * 32)
    assert cache.is_built("ab" * 32)
    (folder / ".ninja_log").write_text("changed")
    assert cache.is_built("ab" * 32)
    (folder / "ext.so").write_bytes(b"tampered")
    assert not cache.is_built("ab" * 32)
    cache.prepare("ab" * 32)
    assert not (folder / "ext.so").exists()


def test_a_result_survives_its_json_both_ways():
    result = Result(mode="hardened", device="cpu", task={"name": "t"}, kernel={"backend": "torch"})
    result.fail("wrong_values", "differs")
    result.add_flag("pytorch_only", "info", "x")
    result.limits = {"call_s": 2.5}
    again = Result.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.to_dict() == result.to_dict()
    with pytest.raises(ValueError, match="schema"):
        Result.from_dict({"schema": 99})
    with pytest.raises(ValueError, match="malformed"):
        Result.from_dict({"schema": 1, "mode": "hardened"})


def test_the_trusted_process_never_imports_torch():
    """The harness process judges only: torch runs in the children (and never initialises CUDA here)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from evaluator.trusted import batch, evaluate, session, correctness, speed, rounds, builds\n"
        "assert 'torch' not in sys.modules, [m for m in sys.modules if m.startswith('torch')][:5]\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=KERNELS.parents[2], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr


def test_the_harness_light_modules_import_neither_torch_nor_django():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import evaluator, evaluator.cli, evaluator.result, evaluator.policy, evaluator.sources\n"
        "import evaluator.stats, evaluator.sandbox.process, evaluator.sandbox.protocol, evaluator.manifest\n"
        "import evaluator.trusted.batch, evaluator.trusted.evaluate, evaluator.trusted.compile_cache\n"
        "import tasks.registry\n"
        "assert 'torch' not in sys.modules and 'django' not in sys.modules, sorted(sys.modules)\n"
    )
    command = [sys.executable, "-c", code]
    completed = subprocess.run(command, cwd=KERNELS.parents[2], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr


def timing_of(
    candidate_ms: float, candidate_loop: float, eager_ms: float, eager_loop: float, rounds: int = 5
):
    from evaluator.trusted.rounds import SideRound, Timing

    timing = Timing()
    for index in range(rounds):
        seeds = [index * 100 + call for call in range(20)]
        records = [[seed, candidate_ms, [0.0] * 5, {}] for seed in seeds]
        timing.rounds.append(SideRound("candidate", {"candidate": records}, candidate_loop, seeds))
        eager = [[seed, eager_ms, [0.0] * 5, {}] for seed in seeds]
        timing.rounds.append(SideRound("reference", {"eager": eager}, eager_loop, seeds))
    return timing


def consistency_flags(timing, before=1.0, after=1.0) -> dict:
    from evaluator.trusted.session import Calibration
    from evaluator.trusted.speed import apply_consistency

    result = Result(mode="hardened", device="cuda", task={}, kernel={})
    policy = make_policy("hardened", "cuda", baselines=("eager",))
    apply_consistency(result, timing, policy, Calibration([before] * 10), Calibration([after] * 10))
    return {flag.code: flag.severity for flag in result.flags}


def test_the_harness_clock_checks_what_the_candidate_claims_on_a_gpu():
    # 20 calls a round; every call costs 1 ms of loop overhead on either side.
    assert consistency_flags(timing_of(1.0, 40.0, 1.0, 40.0)) == {}  # honest: claims + overhead = loop
    assert consistency_flags(timing_of(0.01, 420.0, 1.0, 40.0)) == {
        "timing_forged": "suspect"
    }  # claims < time
    assert consistency_flags(timing_of(50.0, 40.0, 1.0, 40.0)) == {"timing_forged": "hack"}  # claims > loop


def test_eager_beside_the_candidate_is_checked_against_eager_alone():
    assert consistency_flags(timing_of(1.0, 40.0, 1.1, 42.0)) == {}
    assert consistency_flags(timing_of(1.0, 40.0, 1.4, 48.0)) == {"baseline_slowed": "suspect"}
    assert consistency_flags(timing_of(1.0, 40.0, 2.0, 60.0)) == {"baseline_slowed": "hack"}
    assert consistency_flags(timing_of(1.0, 40.0, 2.0, 60.0), before=2.0) == {}  # slow alone too: the GPU's


def test_a_trial_s_inputs_go_into_the_previous_trial_s_tensors_where_their_layout_matches():
    previous = [torch.zeros(4, 3), torch.zeros(2), torch.zeros(5, 5).t(), 7]
    values = [torch.ones(4, 3), torch.ones(3), torch.ones(5, 5).t(), 8]
    placed = candidate.into_storage(previous, values)
    assert placed[0] is previous[0]
    assert torch.equal(placed[0], values[0])
    assert placed[1] is values[1]  # another shape: the new tensor
    assert placed[2] is previous[2]
    assert torch.equal(placed[2], values[2])
    assert placed[3] == 8


def test_with_tracing_on_a_child_s_replies_on_a_gpu_carry_its_reserved_peak(monkeypatch):
    from evaluator.child.process import Child

    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda: 3 << 30)
    child = Child.__new__(Child)
    child.spec, child.device = {"trace_memory": True}, "cuda"
    assert child.traced({"event": "round"}) == {"event": "round", "gpu_peak_mib": 3072}
    child.spec = {"trace_memory": False}
    assert child.traced({"event": "round"}) == {"event": "round"}
    child.spec, child.device = {"trace_memory": True}, "cpu"
    assert child.traced({"event": "round"}) == {"event": "round"}


def test_the_reference_s_whole_output_checks_go_chunk_by_chunk(monkeypatch):
    from evaluator.child import compare

    monkeypatch.setattr(compare, "CHUNK", 1000)  # many chunks, and a last one that is short
    values = torch.randn(12345, 7) * 3 + 0.25
    flat = values.reshape(-1)
    assert compare.mean(flat) == pytest.approx(float(values.double().mean()), rel=1e-12)
    assert compare.all_finite(flat)
    values[1700, 3] = float("inf")  # in a middle chunk
    assert not compare.all_finite(flat)
    assert math.isnan(compare.mean(torch.empty(0)))


def test_the_import_stages_the_kernels_process_reports_are_kept_only_where_they_are_seconds():
    reply = {"stages": {"setup": 0.2, "model": 1.25, "module": "fast", "check": -1, "buffers": float("nan")}}
    assert import_stages(reply) == {"import_setup": 0.2, "import_model": 1.25}
    assert import_stages({"stages": [1, 2]}) == {}


def test_the_import_s_wait_and_reply_come_from_a_span_inside_the_harness_s_own():
    assert import_around({"span": [10.5, 11.75]}, 10.0, 12.0) == {"import_wait": 0.5, "import_reply": 0.25}
    assert import_around({"span": [9.0, 11.0]}, 10.0, 12.0) == {}  # opened before it was asked
    assert import_around({"span": [11.0, 10.5]}, 10.0, 12.0) == {}
    assert import_around({"span": "soon"}, 10.0, 12.0) == {}
