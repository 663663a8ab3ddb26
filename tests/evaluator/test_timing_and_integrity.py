"""Inside the sandbox, in process: what one timed variant does to its inputs, and what the task watch sees."""

import types

import pytest
import torch

from evaluator import integrity, timing
from evaluator.child import describe_output, layout
from evaluator.policy import TASK_MODULE, make_policy

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


@pytest.mark.parametrize("mode", ["hardened", "kernelbench"])
def test_a_variant_relaying_out_its_inputs_changes_no_other_variants(mode):
    plan = make_policy(mode, "cpu", trials=4, warmup=2).timing
    contiguous_for_eager = []

    def candidate(x):
        output = torch.relu(x)
        relayout(x)
        return output

    def eager(x):
        contiguous_for_eager.append(x.is_contiguous())
        return torch.relu(x)

    sets = [[torch.rand(8, 16)], [torch.rand(8, 16)]]
    fresh = timing.fresh_inputs(lambda: [torch.rand(8, 16)], "cpu", 7)
    timing.run_timing({"candidate": candidate, "eager": eager}, sets, plan, "cpu", fresh=fresh)
    assert contiguous_for_eager
    assert all(contiguous_for_eager)
    assert all(values[0].is_contiguous() for values in sets)


def test_a_relaid_out_input_is_a_mutated_input():
    inputs = [torch.rand(4, 8)]
    pristine, before = timing.clone_inputs(inputs), layout(inputs)
    assert not describe_output(torch.zeros(4, 8), inputs, pristine, before)["mutated"]
    relayout(inputs[0])
    assert torch.equal(inputs[0], pristine[0])  # the same values
    assert describe_output(torch.zeros(4, 8), inputs, pristine, before)["mutated"]


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
    assert snapshot.differences()["functions_replaced"] == []
    assert snapshot.again().differences()["functions_replaced"] == []


@pytest.mark.parametrize(
    ("patch", "name"),
    [
        (lambda task, mp: mp.setattr(task, "get_inputs", list), "kb_task.get_inputs"),
        (lambda task, mp: mp.setattr(task, "N", 1), "kb_task.N"),
        (lambda task, mp: mp.setattr(task.Model, "forward", lambda self, x: x), "kb_task.Model.forward"),
        (lambda task, mp: mp.setattr(task.Model, "__call__", print, raising=False), "kb_task.Model.__call__"),
        (lambda task, mp: mp.delattr(task, "get_init_inputs"), "kb_task.get_init_inputs"),
        (lambda task, mp: mp.setattr(torch.nn.Linear, "forward", lambda self, x: x), "Linear.forward"),
    ],
)
def test_a_change_to_the_task_or_its_reference_classes_is_seen(task, monkeypatch, patch, name):
    snapshot, _ = watched(task)
    patch(task, monkeypatch)
    replaced = snapshot.differences()["functions_replaced"]
    assert any(entry.endswith(name) for entry in replaced), replaced
