"""Inside a child, in process: the timed loop, the facts about each call, and the state a kernel leaves."""

import gc
import signal
import sys
import threading
import types
import warnings
import weakref

import pytest
import torch

from evaluator.child import fingerprint, integrity, timing
from evaluator.child.candidate import describe_output, input_prints, layout
from evaluator.child.inputs import make_inputs
from evaluator.policy import TASK_MODULE

TASK = """
import torch
import torch.nn as nn

N = 4


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(N, N)

    def forward(self, x):
        return self.linear(x)


def get_inputs():
    return [torch.rand(2, N)]


def get_init_inputs():
    return []
"""


def relayout(tensor: torch.Tensor) -> None:
    """The same values in column-major memory: a slow layout for the next call on this tensor."""
    tensor.set_(tensor.t().contiguous().t())


def loop(observe=None, before=None):
    return timing.Loop("cpu", True, timing.L2Flusher("cpu", False), lambda index: 3, observe, before)


def test_every_call_gets_new_inputs_so_a_relayout_reaches_no_later_call():
    seen = []

    def candidate(x):
        seen.append(x.is_contiguous())
        relayout(x)
        return torch.relu(x)

    feeds = ((seed, make_inputs(lambda: [torch.rand(8, 16)], seed, "task", "cpu")) for seed in range(4))
    records = loop().run(candidate, feeds)
    assert seen == [True] * 4
    assert [record.seed for record in records] == [0, 1, 2, 3]
    assert all(record.ms >= 0 and len(record.fingerprint) > 5 for record in records)


def test_a_timed_loop_starts_with_the_heap_frozen_so_a_collection_inside_walks_only_the_loop_s_objects():
    gc.unfreeze()
    try:
        kept = [[index] for index in range(1000)]  # alive before the loop: frozen with it
        during = []

        def candidate(x):
            during.append(gc.get_freeze_count())
            return torch.relu(x)

        loop().run(candidate, ((seed, [torch.rand(4)]) for seed in range(2)))
        assert during[0] >= len(kept)
        assert all(count >= len(kept) for count in during)

        class Cycle:  # garbage a kernel left between two loops: collected, not frozen for good
            pass

        cycle = Cycle()
        cycle.me = cycle
        marker = weakref.ref(cycle)
        del cycle
        loop().run(candidate, ((seed, [torch.rand(4)]) for seed in range(1)))
        assert marker() is None
    finally:
        gc.unfreeze()


def test_freezing_the_heap_never_counts_the_frozen_objects(monkeypatch):
    """gc.get_freeze_count() walks every frozen object (some 20 ms a call in a kernel's process)."""

    def walked():
        raise AssertionError("the frozen objects were counted")

    monkeypatch.setattr(timing.gc, "get_freeze_count", walked)
    gc.unfreeze()
    try:
        timing.freeze_heap()
        timing.freeze_heap()
        assert timing.FROZE == [True]
    finally:
        gc.unfreeze()


def test_the_flush_writes_its_buffer_then_holds_the_gpu_before_the_start_event(monkeypatch):
    held, cycles = [], timing.HOLD_CYCLES
    monkeypatch.setattr(timing, "_spin", held.append)
    flusher = timing.L2Flusher("cpu", False)
    flusher.buffer = torch.zeros(8, dtype=torch.int64)  # as a GPU flusher has
    flusher.flush()
    assert flusher.buffer.eq(42).all()
    assert cycles > 0
    assert held == [cycles]
    monkeypatch.setattr(timing, "HOLD_CYCLES", 0)  # the stage bench's flush alone
    flusher.flush()
    assert held == [cycles]


def test_a_relaid_out_or_changed_input_is_a_mutated_input():
    values = [torch.rand(4, 8)]
    before, shapes = input_prints(values, 1), layout(values)
    output = torch.zeros(4, 8)
    assert describe_output(output, values)["aliases"] is False
    assert layout(values) == shapes
    relayout(values[0])
    assert layout(values) != shapes  # the same values, another layout
    values = [torch.rand(4, 8)]
    before = input_prints(values, 1)
    values[0][0, 0] += 1
    assert input_prints(values, 1) != before


def test_an_output_sharing_an_input_s_storage_aliases_it():
    values = [torch.rand(4, 8)]
    assert describe_output(values[0].view(-1), values)["aliases"] is True
    assert describe_output(torch.rand(3).to_sparse(), values)["exact_tensor"] is False


@pytest.fixture
def task():
    module = types.ModuleType(TASK_MODULE)
    exec(TASK, module.__dict__)
    return module


def watched(task):
    reference = task.Model()
    return integrity.Snapshot.take(integrity.task_namespaces(task, reference)), reference


def test_running_the_task_changes_nothing_watched(task):
    snapshot, reference = watched(task)
    reference(*task.get_inputs())
    report = snapshot.full()
    assert report["functions_replaced"] == []
    assert report["operators_overridden"] == []
    assert report["hooks"] == []
    assert report["thread_settings"] == []
    assert report["precision_changed"] == []


def fake_functional() -> types.ModuleType:
    fake = types.ModuleType("torch.nn.functional")
    fake.relu = lambda x, inplace=False: x
    return fake


class Watching(types.ModuleType):
    """A module class of a kernel's, for the module's lookups."""


class Counting(torch.nn.Module):
    """A base class of a kernel's, put under one of torch's."""


@pytest.mark.parametrize(
    ("patch", "name"),
    [
        (lambda task, mp: mp.setattr(task, "get_inputs", list), "kb_task.get_inputs"),
        (lambda task, mp: mp.setattr(task, "N", 1), "kb_task.N"),
        (lambda task, mp: mp.setattr(task.Model, "forward", lambda self, x: x), "kb_task.Model.forward"),
        (lambda task, mp: mp.setattr(task.Model, "__call__", print, raising=False), "kb_task.Model.__call__"),
        (lambda task, mp: mp.delattr(task, "get_init_inputs"), "kb_task.get_init_inputs"),
        (lambda task, mp: mp.setattr(torch.nn.Linear, "forward", lambda self, x: x), "Linear.forward"),
        (lambda task, mp: mp.setattr(torch._C._nn, "gelu", lambda *a: None), "torch._C._nn.gelu"),
        (lambda task, mp: mp.setattr(torch.Tensor, "sum", lambda *a: None), "torch.Tensor.sum"),
        (lambda task, mp: mp.setattr(timing, "_record", lambda *a: None), "evaluator.child.timing._record"),
        # the harness's own globals, not only its functions: the fingerprint's one-pass switch, a module
        (lambda task, mp: mp.setattr(fingerprint, "_one_pass", timing), "fingerprint._one_pass"),
        (lambda task, mp: mp.setattr(timing, "torch", sys), "evaluator.child.timing.torch"),
        (lambda task, mp: mp.setattr(fingerprint, "SAMPLE_POINTS", 0), "fingerprint.SAMPLE_POINTS"),
        # a member added to a torch class, and a class's plain attribute turned into a function
        (lambda task, mp: mp.setattr(torch.nn.Linear, "extra", print, raising=False), "Linear.extra"),
        (lambda task, mp: mp.setattr(torch.nn.Module, "dump_patches", print), "Module.dump_patches"),
        # a watched module swapped in sys.modules for one with other functions under the same names
        (
            lambda task, mp: mp.setitem(sys.modules, "torch.nn.functional", fake_functional()),
            "functional.relu",
        ),
        # the same function object running other code, defaults or keyword defaults (harness 2.12)
        (
            lambda task, mp: mp.setattr(
                torch.nn.functional.relu, "__code__", fake_functional().relu.__code__
            ),
            "functional.relu (its code or defaults)",
        ),
        (
            lambda task, mp: mp.setattr(timing.timed_call, "__defaults__", (None,)),
            "timed_call (its code or defaults)",
        ),
        (
            lambda task, mp: mp.setattr(task.get_inputs, "__code__", (lambda: [None]).__code__),
            "kb_task.get_inputs (its code or defaults)",
        ),
        # every lookup on a module through a class of the kernel's
        (
            lambda task, mp: mp.setattr(torch.nn.functional, "__class__", Watching),
            "torch.nn.functional.__class__",
        ),
    ],
)
def test_a_replaced_callable_of_torch_the_harness_or_the_task_is_seen(task, monkeypatch, patch, name):
    snapshot, _ = watched(task)
    patch(task, monkeypatch)
    replaced = snapshot.full(operators=False)["functions_replaced"]
    assert any(entry.endswith(name) for entry in replaced), replaced


def test_a_keyword_default_changed_in_place_is_seen(task):
    def scaled(x, *, factor=2.0):
        return x * factor

    task.scaled = scaled  # a function of the task's with a keyword default (any torch the extra allows)
    snapshot, _ = watched(task)
    scaled.__kwdefaults__["factor"] = 0.0  # the same dict, the same function object
    replaced = snapshot.full(operators=False)["functions_replaced"]
    assert "kb_task.scaled (its code or defaults)" in replaced, replaced


def test_keyword_defaults_moved_between_keys_in_place_are_seen(task):
    def check(x, *, strict=True, lenient=False):
        return x if strict else None

    task.check = check
    snapshot, _ = watched(task)
    keywords = check.__kwdefaults__
    strict, lenient = keywords.pop("strict"), keywords.pop("lenient")
    keywords["lenient"], keywords["strict"] = strict, lenient  # the values in their order, the keys swapped
    replaced = snapshot.full(operators=False)["functions_replaced"]
    assert "kb_task.check (its code or defaults)" in replaced, replaced


def test_members_of_a_torch_class_swapped_between_names_are_seen(task, monkeypatch):
    """The same member objects in the same order, their names exchanged (the class's keys and ids unchanged
    as sets and as a sequence): a method then runs under another's name."""
    snapshot, _ = watched(task)
    bilinear = torch.nn.Bilinear  # not in the task's model: only the modules' record watches it
    names = list(vars(bilinear))
    tail = names[names.index("reset_parameters") :]
    values = [vars(bilinear)[name] for name in tail]
    for name in tail:
        monkeypatch.delattr(bilinear, name)
    swap = {"reset_parameters": "forward", "forward": "reset_parameters"}
    for name, value in zip(tail, values, strict=True):
        monkeypatch.setattr(bilinear, swap.get(name, name), value, raising=False)
    replaced = snapshot.full(operators=False)["functions_replaced"]
    assert {"torch.nn.Bilinear.forward", "torch.nn.Bilinear.reset_parameters"} <= set(replaced), replaced


def test_a_torch_class_no_global_binds_any_more_is_still_watched(task, monkeypatch):
    snapshot, _ = watched(task)
    bilinear = torch.nn.Bilinear
    for module in list(sys.modules.values()):
        if isinstance(module, types.ModuleType) and vars(module).get("Bilinear") is bilinear:
            monkeypatch.setattr(module, "Bilinear", None)
    monkeypatch.setattr(bilinear, "forward", lambda self, x, y: x)
    replaced = snapshot.full(operators=False)["functions_replaced"]
    assert any(entry.endswith("Bilinear.forward") for entry in replaced), replaced


def test_a_base_class_put_under_a_torch_class_is_seen(task):
    snapshot, _ = watched(task)
    bases = torch.nn.Tanh.__bases__
    torch.nn.Tanh.__bases__ = (Counting,)  # its inherited members now resolve through the kernel's class
    try:
        replaced = snapshot.full(operators=False)["functions_replaced"]
    finally:
        torch.nn.Tanh.__bases__ = bases
    assert "torch.nn.Tanh.__bases__" in replaced, replaced
    assert snapshot.full(operators=False)["functions_replaced"] == []


def test_a_torch_class_said_to_be_from_elsewhere_is_still_watched(task, monkeypatch):
    """A class is watched as the snapshot found it: renaming its module does not take its members out."""
    snapshot, _ = watched(task)
    monkeypatch.setattr(torch.nn.Linear, "__module__", "elsewhere")
    monkeypatch.setattr(torch.nn.Linear, "forward", lambda self, x: x)
    assert "torch.nn.Linear.forward" in snapshot.full(operators=False)["functions_replaced"]


def test_what_changes_without_a_callable_taking_a_watched_place_is_not_a_replacement(task, monkeypatch):
    snapshot, _ = watched(task)
    monkeypatch.setattr(torch.nn.Module, "dump_patches", True)  # a plain attribute, another plain value
    monkeypatch.setattr(torch.nn.Linear, "__setattr__", print, raising=False)  # what torch.compile sets
    monkeypatch.delattr(torch.nn.functional, "relu")  # gone: the module's own code fails, nothing runs
    monkeypatch.setattr(sys.modules["math"], "pi", 3.0)  # not callable, outside the harness's modules
    assert snapshot.full(operators=False)["functions_replaced"] == []


def test_global_hooks_modes_and_tracing_left_behind_are_seen(task):
    snapshot, _ = watched(task)
    handle = torch.nn.modules.module.register_module_forward_hook(lambda module, args, out: out)
    try:
        assert any("_global_forward_hooks" in entry for entry in snapshot.quick()["hooks"])
    finally:
        handle.remove()
    mode = torch.overrides.TorchFunctionMode()
    mode.__enter__()
    try:
        assert any("torch_function_modes" in entry for entry in snapshot.quick()["hooks"])
    finally:
        mode.__exit__(None, None, None)
    sys.setprofile(lambda *args: None)
    try:
        assert any("sys.getprofile" in entry for entry in snapshot.quick()["hooks"])
    finally:
        sys.setprofile(None)
    threading.setprofile(lambda *args: None)
    try:
        assert any("threading profile hook" in entry for entry in snapshot.quick()["hooks"])
    finally:
        threading.setprofile(None)
    callback = lambda phase, info: None  # noqa: E731
    gc.callbacks.append(callback)
    try:
        assert any("gc.callbacks" in entry for entry in snapshot.quick()["hooks"])
    finally:
        gc.callbacks.remove(callback)
    previous = signal.signal(signal.SIGUSR2, lambda number, frame: None)
    try:
        assert any("signal handlers" in entry for entry in snapshot.quick()["hooks"])
    finally:
        signal.signal(signal.SIGUSR2, previous)
    signal.setitimer(signal.ITIMER_VIRTUAL, 60.0)
    try:
        assert any("interval timers" in entry for entry in snapshot.quick()["hooks"])
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
    assert snapshot.quick()["hooks"] == []


def test_thread_settings_changed_are_seen(task):
    snapshot, _ = watched(task)
    threads = torch.get_num_threads()
    torch.set_num_threads(threads + 1)
    try:
        assert any("get_num_threads" in entry for entry in snapshot.quick()["thread_settings"])
    finally:
        torch.set_num_threads(threads)


def test_an_operator_override_through_torch_library_is_seen(task):
    snapshot, _ = watched(task)
    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns (once per process) that the kernel is overridden
        library.impl("hardtanh", lambda x, a=-1.0, b=1.0: x * 0, "CPU")
    try:
        assert "aten::hardtanh" in snapshot.full()["operators_overridden"]
    finally:
        library._destroy()
    assert "aten::hardtanh" not in snapshot.full()["operators_overridden"]


def test_a_new_operator_in_its_own_namespace_is_not_an_override(task):
    snapshot, _ = watched(task)
    library = torch.library.Library("kb_test_ops", "DEF")
    library.define("double(Tensor x) -> Tensor")
    library.impl("double", lambda x: x * 2, "CPU")
    try:
        assert snapshot.full()["operators_overridden"] == []
    finally:
        library._destroy()


def test_an_aten_operator_registered_before_a_refresh_is_watched_after_it():
    """A snapshot brought up to date (taken at boot) adds the tables of operators registered since."""
    snapshot = integrity.Snapshot.take()
    defined = torch.library.Library("aten", "FRAGMENT")
    defined.define("kb_refresh_probe(Tensor x) -> Tensor")
    defined.impl("kb_refresh_probe", lambda x: x, "CPU")
    override = torch.library.Library("aten", "IMPL")
    try:
        snapshot.refresh({})
        assert snapshot.full()["operators_overridden"] == []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            override.impl("kb_refresh_probe", lambda x: x * 0, "CPU")
        assert "aten::kb_refresh_probe" in snapshot.full()["operators_overridden"]
    finally:
        override._destroy()
        defined._destroy()
