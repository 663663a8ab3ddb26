"""Work a kernel does where nothing is timed: the CPU its processes use (read from /proc by the harness),
seeding through generators bound before its import, torch's own names watched, and each call's seed given
only when that call asks for it."""

import json
import subprocess
import sys
import time
import types

import pytest
import torch

from evaluator.child import inputs, integrity
from evaluator.policy import KERNEL_LOOP_CORES
from evaluator.result import Result, TimingInfo
from evaluator.sandbox.cputime import tree_cpu_ms
from evaluator.trusted.conversation import Stop
from evaluator.trusted.rounds import SideRound, Timing
from evaluator.trusted.session import SeedsToServe, host_timed_loop
from evaluator.trusted.speed import flag_kernel_cpu
from tests.evaluator.conftest import RELU, run_cli

SPIN = "import time\nuntil = time.process_time() + {seconds}\nwhile time.process_time() < until: pass\n"
# A parent that only sleeps while the child it forked spins, and then reaps it.
FORK_SPIN = (
    "import os, time\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    until = time.process_time() + {seconds}\n"
    "    while time.process_time() < until: pass\n"
    "    os._exit(0)\n"
    "os.waitpid(pid, 0)\n"
    "time.sleep(30)\n"
)


def cpu_of(code: str, settle_s: float) -> float:
    """The CPU a Python process running `code` used in its first settle_s seconds, by tree_cpu_ms."""
    process = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(0.3)  # the interpreter's own start-up is not what is measured
        before = tree_cpu_ms(process.pid)
        time.sleep(settle_s)
        return tree_cpu_ms(process.pid) - before
    finally:
        process.kill()
        process.wait()


def test_the_cpu_of_a_tree_counts_its_processes_and_the_children_they_reaped():
    assert cpu_of(SPIN.format(seconds=0.8) + "time.sleep(30)\n", 1.5) >= 500
    assert cpu_of(FORK_SPIN.format(seconds=0.8), 1.5) >= 500  # a forked child, reaped: the parent's share
    assert cpu_of("import time\ntime.sleep(30)\n", 0.8) <= 30
    assert tree_cpu_ms(2**22 + 7) is None  # no such process


def timing(loop_cpu: float, loop_ms: float, beside_cpu: float, beside_ms: float, rounds: int = 4) -> Timing:
    """Rounds whose kernel CPU readings total these figures."""
    turns = []
    loop, own, beside, span = loop_ms / rounds, loop_cpu / rounds, beside_cpu / rounds, beside_ms / rounds
    for _ in range(rounds):
        turns.append(SideRound("candidate", {}, loop, [], {}, own, loop))
        turns.append(SideRound("reference", {}, 0.0, [], {}, beside, span))
    return Timing(turns)


def judged(readings: Timing, device: str = "cpu") -> dict[str, str]:
    result = Result(mode="hardened", device=device, task={}, kernel={})
    result.timing = TimingInfo(method="host_clock", trials=1, warmup=0, l2_flush=False, host_check={})
    flag_kernel_cpu(result, readings, KERNEL_LOOP_CORES[device])
    assert result.timing.host_check["kernel_loop_span_ms"] > 0
    return {flag.code: flag.severity for flag in result.flags}


def test_one_thread_in_the_loops_and_nothing_beside_the_baselines_is_clean():
    assert judged(timing(loop_cpu=1000, loop_ms=1000, beside_cpu=20, beside_ms=1200)) == {}
    assert judged(timing(loop_cpu=980, loop_ms=1000, beside_cpu=0, beside_ms=1200)) == {}


def test_more_than_one_thread_in_the_loops_is_a_hack():
    flags = judged(timing(loop_cpu=1300, loop_ms=1000, beside_cpu=0, beside_ms=1200))
    assert flags == {"cpu_beside_timed_calls": "hack"}
    assert judged(timing(loop_cpu=1150, loop_ms=1000, beside_cpu=0, beside_ms=1200), "cuda") == {}
    assert judged(timing(loop_cpu=1800, loop_ms=1000, beside_cpu=0, beside_ms=1200), "cuda") == {
        "cpu_beside_timed_calls": "hack"
    }


def test_work_while_the_baselines_are_timed_is_a_hack():
    flags = judged(timing(loop_cpu=900, loop_ms=1000, beside_cpu=300, beside_ms=1200))
    assert flags == {"cpu_while_baselines_timed": "hack"}


def test_readings_proc_could_not_give_judge_nothing():
    turns = [SideRound("candidate", {}, 10.0, []), SideRound("reference", {}, 10.0, [])]
    result = Result(mode="hardened", device="cpu", task={}, kernel={})
    flag_kernel_cpu(result, Timing(turns), 1.0)
    assert result.flags == []


@pytest.fixture
def bound_generators(monkeypatch):
    monkeypatch.setattr(inputs, "_generators", [])
    inputs.bind_generators("cpu")
    return inputs._generators


def test_seeding_goes_through_the_generators_bound_before_the_kernel(bound_generators, monkeypatch):
    called = []
    planted = types.SimpleNamespace(_is_in_bad_fork=lambda: False, manual_seed_all=called.append)
    monkeypatch.setattr(torch, "privateuseone", planted, raising=False)
    inputs.seed_everything(7)
    drawn = torch.rand(5)
    torch.manual_seed(7)
    assert torch.equal(drawn, torch.rand(5))  # the same draw as torch.manual_seed's
    assert called == [7]  # torch.manual_seed ran the planted code; seed_everything did not
    assert bound_generators == [torch.default_generator]


def test_names_planted_on_torch_and_submodules_rebound_are_replaced_functions(monkeypatch):
    record = integrity.record_modules([])
    assert integrity.replaced_since(record) == set()
    shim = types.ModuleType("torch.mps")
    monkeypatch.setattr(torch, "privateuseone", types.SimpleNamespace(), raising=False)
    monkeypatch.setattr(torch, "mps", shim)
    monkeypatch.setitem(vars(torch), "__warningregistry__", {})  # Python's own bookkeeping: not counted
    replaced = integrity.replaced_since(record)
    assert {"torch.privateuseone", "torch.mps"} <= replaced
    assert not any("__warningregistry__" in name for name in replaced)
    monkeypatch.setattr(torch, "mps", sys.modules["torch.mps"])
    monkeypatch.setitem(sys.modules, "torch.random", types.ModuleType("torch.random"))
    assert "sys.modules['torch.random']" in integrity.replaced_since(record)


def test_a_submodule_imported_after_the_record_is_not_a_change(monkeypatch):
    record = integrity.record_modules([])
    name = "torch.evaluator_test_submodule"
    module = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(torch, "evaluator_test_submodule", module, raising=False)
    assert integrity.replaced_since(record) == set()


def test_a_snapshot_taken_at_boot_takes_in_the_harness_s_changes_and_still_catches_the_kernel_s(monkeypatch):
    """Taken as the process boots, brought up to date at the import: what the harness's own code loaded or
    replaced in between is the baseline; a module loaded then is watched, and what changes after is found."""
    monkeypatch.setattr(json, "none_at_boot", None, raising=False)  # not callable: not watched at boot
    snapshot = integrity.Snapshot.take()
    name = "torch.evaluator_test_loaded_at_setup"
    loaded = types.ModuleType(name)
    loaded.helper = lambda x: x
    monkeypatch.setitem(sys.modules, name, loaded)
    monkeypatch.setattr(torch.nn.functional, "silu", lambda x, inplace=False: x)  # the set-up's own
    monkeypatch.setattr(json, "added_at_setup", lambda x: x, raising=False)  # a name json did not have
    json.none_at_boot = print  # now callable
    assert "torch.nn.functional.silu" in snapshot.full(operators=False)["functions_replaced"]
    snapshot.refresh({})
    assert snapshot.full(operators=True)["functions_replaced"] == []
    monkeypatch.setattr(loaded, "helper", lambda x: x + 1)  # the kernel's, after the import
    monkeypatch.setattr(json, "added_at_setup", lambda x: x + 1)
    monkeypatch.setattr(json, "none_at_boot", repr)
    monkeypatch.setattr(torch.nn.functional.normalize, "__code__", (lambda input, *a, **k: input).__code__)
    replaced = snapshot.full(operators=False)["functions_replaced"]
    assert {f"{name}.helper", "json.added_at_setup", "json.none_at_boot"} <= set(replaced)
    assert "torch.nn.functional.normalize (its code or defaults)" in replaced


class Talk:
    """A kernel's side of a hardened round, scripted: the messages it sends, and the seeds it is given."""

    who = "kernel"

    def __init__(self, script: list[dict]):
        self.script, self.given = list(script), []
        self.child = types.SimpleNamespace(send=self.given.append)

    def receive(self, timeout: float, stage: str) -> dict:
        return self.script.pop(0)


ASK, GO, PRINT = {"event": "next_seed"}, {"event": "go"}, {"event": "print_seed"}
START, END = {"event": "timing_loop", "phase": "start"}, {"event": "timing_loop", "phase": "end"}
SEEDS = SeedsToServe([11, 12], [21, 22, 23], [31, 32, 33])
CALL = [ASK, GO, PRINT]


def test_each_seed_is_given_when_its_call_asks_and_not_before():
    talk = Talk([ASK, ASK, START, *CALL, *CALL, *CALL, END])
    phases = []
    times = host_timed_loop(talk, 5.0, "timing", phases.append, SEEDS)
    given = [(message["cmd"], message.get("seed")) for message in talk.given]
    assert given == [("seed", 11), ("seed", 12)] + [
        step for n in range(3) for step in (("seed", 21 + n), ("go", None), ("print_seed", 31 + n))
    ]
    assert phases == ["start", "end"]
    assert times.loop_ms >= 0
    assert len(times.call_ms) == 3
    assert all(ms >= 0 for ms in times.call_ms)


@pytest.mark.parametrize(
    "script",
    [
        [ASK, ASK, ASK, START],  # a third warm-up seed
        [ASK, START, ASK, END],  # a warm-up seed left: the loop may not start
        [ASK, ASK, START, *CALL, END],  # timed seeds left: the loop may not end
        [ASK, ASK, START, *CALL, *CALL, *CALL, ASK],  # a fourth timed seed
        [ASK, ASK, START, ASK, PRINT],  # a fingerprint seed before the call's go
        [ASK, ASK, START, GO],  # go before the call's seed
        [ASK, ASK, START, ASK, GO, GO],  # a second go for one call
        [ASK, ASK, START, ASK, GO, PRINT, PRINT],  # a second fingerprint seed for one call
        [ASK, ASK, START, ASK, ASK, GO, PRINT, GO],  # go for a call whose seed it asked early
        [ASK, ASK, START, *CALL, *CALL, ASK, GO, END],  # a fingerprint seed left: the loop may not end
    ],
)
def test_a_round_out_of_order_is_a_sandbox_violation(script):
    with pytest.raises(Stop) as stop:
        host_timed_loop(Talk(script), 5.0, "timing", None, SEEDS)
    assert stop.value.kind == "sandbox_violation"


# A kernel that, past the correctness trials (whose seeds are KernelBench's and fixed), looks for a call's
# seed told by the one before (a round's seeds one after another, as until harness 2.8.0) and returns zeros
# once it finds one: on seeds drawn one by one it finds none and stays correct.
SEED_PREDICTOR = """
import torch
import torch.nn as nn

seen = []


class ModelNew(nn.Module):
    def forward(self, x):
        seed = torch.initial_seed()
        predictable = len(seen) > 12 and 0 < seed - seen[-1] < 4096
        seen.append(seed)
        return torch.zeros_like(x) if predictable else torch.relu(x)
"""


def test_timed_seeds_tell_nothing_of_each_other(tmp_path):
    kernel = tmp_path / "seed_predictor.py"
    kernel.write_text(SEED_PREDICTOR)
    out = tmp_path / "result.json"
    done = run_cli(
        "run", "--task", str(RELU), "--kernel", str(kernel), "--device", "cpu", "--mode", "hardened",
        "--baselines", "eager", "--trials", "10", "--json", str(out),
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["correct"], result["error"]
    assert not [flag for flag in result["flags"] if flag["severity"] == "hack"], result["flags"]
    assert result["timing"]["trials"] >= 10
