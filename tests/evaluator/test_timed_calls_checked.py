"""Every timed call checked by what the kernel cannot know or reach: its fingerprint seed told after it
returned, sampled values held to the trials' rule, the harness's clock on each call, every page of a CPU
output read inside the call, native fault handlers watched, inputs that share memory kept apart; and each
loop's record of where its time went."""

import json
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from evaluator.checks import close_value, matches
from evaluator.child import fingerprint, integrity, timing
from evaluator.child.candidate import into_storage
from evaluator.policy import make_policy
from evaluator.result import Result, TimingInfo
from evaluator.trusted.rounds import SideRound, Timing, reported_phases
from evaluator.trusted.speed import flag_unclaimed_call_time, samples, where_rounds_went
from tests.evaluator.conftest import run_cli

TOLERANCE = 1e-4


def test_an_output_off_by_five_tolerances_everywhere_fails_at_the_sampled_values():
    torch.manual_seed(0)
    expected = torch.rand(256, 256) * 100
    drifted = expected * (1 + 5 * TOLERANCE)
    reference = fingerprint.fingerprint(expected, 11)
    assert matches(fingerprint.fingerprint(expected.clone(), 11), reference, expected.numel(), TOLERANCE)
    # the sums and the projection allow ten tolerances: only the values, held to one, see the drift
    summary_only = fingerprint.fingerprint(drifted, 11)[:5] + reference[5:]
    assert matches(summary_only, reference, expected.numel(), TOLERANCE)
    assert not matches(fingerprint.fingerprint(drifted, 11), reference, expected.numel(), TOLERANCE)


def test_an_output_far_below_the_tolerance_is_still_judged_by_its_scale():
    torch.manual_seed(0)
    softmax = torch.softmax(torch.rand(4, 65536), dim=1)  # every value about 1.5e-5, below atol
    reference = fingerprint.fingerprint(softmax, 5)
    assert matches(fingerprint.fingerprint(softmax.clone(), 5), reference, softmax.numel(), TOLERANCE)
    zeros = fingerprint.fingerprint(torch.zeros_like(softmax) * 1e-3, 5)
    assert not matches(zeros, reference, softmax.numel(), TOLERANCE)


def test_a_sampled_infinity_matches_only_itself_and_a_nan_reference_leaves_it_to_the_trials():
    inf = float("inf")
    assert close_value(inf, inf, TOLERANCE)
    assert close_value(-inf, -inf, TOLERANCE)
    assert not close_value(1e30, inf, TOLERANCE)
    assert not close_value(-inf, inf, TOLERANCE)
    assert not close_value(inf, 1.0, TOLERANCE)
    assert not close_value(float("nan"), 1.0, TOLERANCE)
    assert close_value(5.0, float("nan"), TOLERANCE)
    assert close_value(1.0 + 0.9 * TOLERANCE * 2, 1.0, TOLERANCE)
    assert not close_value(1.0 + 1.1 * TOLERANCE * 2, 1.0, TOLERANCE)


def test_a_timed_loop_takes_go_before_each_call_and_the_fingerprint_seed_after_it():
    events = []

    def kernel(x):
        events.append("call")
        return x + 1

    def print_seed(index):
        events.append(f"print {index}")
        return 100 + index

    loop = timing.Loop(
        "cpu", True, timing.L2Flusher("cpu", False), print_seed, ready=lambda: events.append("go")
    )
    feeds = ((seed, [torch.full((4,), float(seed))]) for seed in (1, 2))
    records = loop.run(kernel, feeds)
    assert events == ["go", "call", "print 0", "go", "call", "print 1"]
    assert records[1].fingerprint == fingerprint.fingerprint(torch.full((4,), 3.0), 101)
    events.clear()
    loop.run(kernel, ((seed, [torch.ones(4)]) for seed in (1, 2)), keep=False)  # warm-up: no go, no print
    assert events == ["call", "call"]


def turns(claims: list[float], spans: list[float], eager: list[float], eager_spans: list[float]) -> Timing:
    records = [[index, ms, [0.0], {}] for index, ms in enumerate(claims)]
    eager_records = [[index, ms, [0.0], {}] for index, ms in enumerate(eager)]
    return Timing(
        [
            SideRound("candidate", {"candidate": records}, sum(spans), [], call_ms=spans),
            SideRound("reference", {"eager": eager_records}, sum(eager_spans), [], call_ms=eager_spans),
        ]
    )


def unclaimed(readings: Timing, device: str) -> dict[str, str]:
    result = Result(mode="hardened", device=device, task={}, kernel={})
    result.timing = TimingInfo(method="host_clock", trials=1, warmup=0, l2_flush=False, host_check={})
    flag_unclaimed_call_time(result, readings, device)
    assert "candidate_call_beyond_claim_ms" in result.timing.host_check
    return {flag.code: flag.severity for flag in result.flags}


def test_on_a_gpu_calls_longer_on_the_harness_clock_than_claimed_are_forged():
    honest = turns([2.0] * 9, [2.3] * 9, [2.0] * 9, [2.32] * 9)
    assert unclaimed(honest, "cuda") == {}
    shrunk = turns([0.9] * 9, [2.3] * 9, [2.0] * 9, [2.32] * 9)  # records rewritten to 0.45x
    assert unclaimed(shrunk, "cuda") == {"timing_forged": "hack"}
    slightly = turns([1.8] * 9, [2.3] * 9, [2.0] * 9, [2.3] * 9)  # 0.2 ms a call: a suspect
    assert unclaimed(slightly, "cuda") == {"timing_forged": "suspect"}
    spread = turns([0.89] * 9, [1.61] * 9, [0.89] * 9, [1.49] * 9)  # +0.12 ms: an honest kernel's, measured
    assert unclaimed(spread, "cuda") == {}
    answered = turns([2.0] * 9, [2.05] * 9, [2.0] * 9, [2.5] * 9)  # its process skipped the harness's span
    assert unclaimed(answered, "cuda") == {"timing_forged": "suspect"}


def test_on_the_cpu_claims_below_the_harness_clock_are_raised_to_it():
    policy = make_policy("hardened", "cpu")
    shrunk = turns([0.9] * 9, [2.3] * 9, [2.0] * 9, [2.32] * 9)
    assert samples(shrunk, "candidate", policy) == pytest.approx([1.98] * 9)
    assert samples(shrunk, "eager", policy) == pytest.approx([2.0] * 9)
    assert unclaimed(shrunk, "cpu") == {}  # on a shared CPU the clock is too noisy to flag by
    honest = turns([2.0, 2.1, 1.9], [2.3, 2.4, 2.2], [2.0] * 3, [2.3] * 3)
    assert samples(honest, "candidate", policy) == pytest.approx([2.0, 2.1, 1.9])


def test_a_round_the_clock_did_not_span_call_by_call_is_not_judged():
    result = Result(mode="hardened", device="cpu", task={}, kernel={})
    readings = turns([0.1] * 3, [], [2.0] * 3, [2.3] * 3)
    flag_unclaimed_call_time(result, readings, "cpu")
    assert result.flags == []


def test_inputs_sharing_memory_are_not_copied_into_one_tensor():
    shared = torch.zeros(4)
    previous = [shared, shared]
    fresh = [torch.ones(4), torch.full((4,), 2.0)]
    placed = into_storage(previous, fresh)
    assert placed[0].tolist() == [1.0] * 4
    assert placed[1].tolist() == [2.0] * 4
    alone = [torch.zeros(4), torch.zeros(4)]
    placed = into_storage(alone, [torch.ones(4), torch.full((4,), 2.0)])
    assert placed[0] is alone[0]
    assert placed[1] is alone[1]
    assert alone[1].tolist() == [2.0] * 4


PROTECTED_LAST_PAGE = """
import ctypes, mmap, sys
import torch
from evaluator.child.timing import read_every_page
libc = ctypes.CDLL(None)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
memory = mmap.mmap(-1, 4 * mmap.PAGESIZE)
tensor = torch.frombuffer(memory, dtype=torch.float32)
assert libc.mprotect(tensor.data_ptr() + 3 * mmap.PAGESIZE, mmap.PAGESIZE, 0) == 0
print("protected", flush=True)
read_every_page(tensor[:10])  # a view of the first page: the whole storage is read
print("not read", flush=True)
"""


def test_every_page_of_a_cpu_output_is_read_inside_the_timed_call():
    completed = subprocess.run(
        [sys.executable, "-c", PROTECTED_LAST_PAGE], capture_output=True, text=True, timeout=120
    )
    assert completed.stdout.split() == ["protected"], completed.stderr[-2000:]
    assert completed.returncode == -11  # SIGSEGV on the last page


def test_a_native_fault_handler_is_seen():
    code = textwrap.dedent(
        """
        import faulthandler
        from evaluator.child import integrity
        before = integrity.native_fault_handlers()
        faulthandler.enable()
        print(repr(before), repr(integrity.native_fault_handlers()))
        """
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    before, after = completed.stdout.split(" ", 1)
    assert "SIGSEGV" not in before
    assert "SIGSEGV" in after
    assert "native fault handlers" in integrity.hook_state()


NUMPY_TASK = """
import numpy as np
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.from_numpy(np.random.rand(64).astype("float32"))]


def get_init_inputs():
    return []
"""


def test_a_task_whose_inputs_a_torch_seed_does_not_fix_is_refused_as_broken(tmp_path):
    pytest.importorskip("numpy")
    task = tmp_path / "numpy_task.py"
    task.write_text(NUMPY_TASK)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(NUMPY_TASK.replace("class Model", "class ModelNew"))
    completed = run_cli(
        "run", "--task", str(task), "--kernel", str(kernel), "--device", "cpu", "--baselines", "eager",
        "--json", str(tmp_path / "out.json"), timeout=300,
    )  # fmt: skip
    assert completed.returncode == 2, completed.stderr[-2000:]
    assert "draws different inputs under the same torch seed" in completed.stderr
    assert not (tmp_path / "out.json").exists() or json.loads((tmp_path / "out.json").read_text())


def test_a_loop_says_where_its_time_went_phase_by_phase_and_the_harness_keeps_known_phases_only():
    def kernel(x):
        time.sleep(0.03)
        return x + 1

    def print_seed(index):
        time.sleep(0.02)
        return index

    loop = timing.Loop("cpu", True, timing.L2Flusher("cpu", False), print_seed, ready=lambda: None)
    loop.run(kernel, ((seed, [torch.ones(4)]) for seed in (1,)), keep=False)
    loop.run(kernel, ((seed, [torch.ones(4)]) for seed in (1, 2)))
    phases = loop.phases_ms()
    assert phases["warmup"] >= 30
    assert phases["call"] >= 60
    assert phases["fingerprint"] >= 40
    assert {"inputs", "before", "go", "observe", "collect", "freeze"} <= set(phases)
    reply = {"phases_ms": {**phases, "made_up": 1.0, "observe": float("nan"), "collect": -1}}
    kept = reported_phases(reply)
    assert set(kept) == set(phases) - {"observe", "collect"}
    records = [[seed, 30.0, [0.0], {}] for seed in (1, 2)]
    turn = SideRound("candidate", {"candidate": records}, 120.0, [1, 2], turn_ms=150.0, phases=kept)
    went = where_rounds_went(Timing([turn]))
    assert went == {
        "candidate": {"turns": 150.0, "loops": 120.0, "claimed": 60.0}
        | {f"reported_{name}": round(ms, 3) for name, ms in kept.items()}
    }
