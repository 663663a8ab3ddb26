"""The task registry: the built-in suite's shape, KernelBench checkouts, and clear errors for bad files."""

import pytest
import torch

from evaluator.child import compare, inputs
from evaluator.child.process import load_module
from evaluator.policy import KERNELBENCH_TRIAL_SEEDS
from tasks.registry import (
    TaskFileError,
    builtin_tasks,
    content_hash,
    cpu_sizes,
    cpu_task_file,
    kernelbench_tasks,
    resize,
)

PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand(4, 4)]


def get_init_inputs():
    return []
"""
# Degenerate by design: a null canary passes them under KernelBench's rules.
DEGENERATE = {(1, 3), (1, 9), (2, 4)}


def test_builtin_suite_has_enough_problems_per_level_each_with_a_cpu_variant():
    specs = builtin_tasks()
    per_level = {level: [spec for spec in specs if spec.level == level] for level in (1, 2, 3)}
    assert len(per_level[1]) >= 8
    assert len(per_level[2]) >= 8
    assert len(per_level[3]) >= 3
    for spec in specs:
        assert spec.suite == "builtin"
        assert spec.cpu_source
        assert spec.cpu_source != spec.source
        assert spec.content_hash == content_hash(spec.source)
        assert spec.name.startswith(f"{spec.problem_id}_")
    ids = [(spec.level, spec.problem_id) for spec in specs]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("spec", builtin_tasks(), ids=lambda spec: f"L{spec.level}/{spec.name}")
def test_every_cpu_variant_runs_and_only_the_designed_tasks_are_degenerate(spec):
    path = str(cpu_task_file(spec.level, spec.name))
    module = load_module(path, f"registry_{spec.level}_{spec.problem_id}")
    with torch.no_grad():
        model = inputs.build_model(module.Model, inputs.init_inputs(module.get_init_inputs, "cpu"), "cpu")
        passing = {"zeros": True, "constant": True, "input": True}
        constant = None
        for seed in KERNELBENCH_TRIAL_SEEDS:  # what the reference process does for each KernelBench trial
            values = inputs.make_inputs(module.get_inputs, seed, "task", "cpu")
            inputs.seed_everything(seed)
            expected = model(*values)
            assert torch.isfinite(expected).all()
            constant = float(expected.double().mean()) if constant is None else constant
            first = values[0] if values[0].shape == expected.shape else None
            verdicts = compare.canary_verdicts(compare.Expectation(expected, "task", 1e-4, constant, first))
            passing = {name: passing[name] and verdicts.get(name, False) for name in passing}
    assert any(passing.values()) == ((spec.level, spec.problem_id) in DEGENERATE), passing


def test_integer_inputs_are_part_of_the_suite():
    sources = "\n".join(spec.cpu_source for spec in builtin_tasks())
    assert sources.count("torch.randint") >= 2


def make_checkout(root, files):
    for relative, text in files.items():
        path = root / "KernelBench" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_kernelbench_checkout_keeps_ids_names_and_hashes(tmp_path):
    checkout = make_checkout(
        tmp_path,
        {
            "level1/19_ReLU.py": PROBLEM,
            "level1/26_GELU_.py": PROBLEM.replace("relu", "gelu"),
            "level2/12_Gemm.py": PROBLEM,
            "level4/1_gpt2.py": PROBLEM,
            "level1/README.md": "not a problem",
        },
    )
    specs = kernelbench_tasks(checkout)
    assert [(s.level, s.problem_id, s.name) for s in specs] == [
        (1, 19, "19_ReLU"),
        (1, 26, "26_GELU_"),
        (2, 12, "12_Gemm"),
    ]
    assert specs[0].content_hash == content_hash(PROBLEM)
    assert specs[0].cpu_source == ""
    assert kernelbench_tasks(checkout / "KernelBench") == specs


def test_a_file_without_model_is_refused(tmp_path):
    checkout = make_checkout(tmp_path, {"level1/1_Broken.py": "def get_inputs():\n    return []\n"})
    with pytest.raises(TaskFileError, match="defines no Model, get_init_inputs"):
        kernelbench_tasks(checkout)


def test_a_syntax_error_is_refused(tmp_path):
    checkout = make_checkout(tmp_path, {"level1/1_Broken.py": "class Model(\n"})
    with pytest.raises(TaskFileError, match="not valid Python"):
        kernelbench_tasks(checkout)


def test_a_folder_that_is_not_a_checkout_is_refused(tmp_path):
    with pytest.raises(TaskFileError, match="no KernelBench/level1"):
        kernelbench_tasks(tmp_path)


SIZED = """batch = 4096
shape = (64, 1, 1)


class Model:
    pass


def get_inputs():
    return []


def get_init_inputs():
    return [shape]
"""


def test_resize_replaces_module_constants_and_keeps_tuples():
    source = SIZED
    resized = resize(source, {"batch": 8, "shape": [2, 1, 1]}, "t.py")
    assert "batch = 8\n" in resized
    assert "shape = (2, 1, 1)\n" in resized
    with pytest.raises(TaskFileError, match="no module-level width to resize"):
        resize(source, {"width": 3}, "t.py")


def test_every_builtin_problem_has_a_cpu_size_and_nothing_else_does():
    names = {f"level{spec.level}/{spec.name}" for spec in builtin_tasks()}
    assert set(cpu_sizes()) == names
