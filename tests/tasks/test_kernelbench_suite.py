"""A KernelBench-shaped checkout, written here, through `manage.py import_tasks`: levels 1–3 at full size
become the kernelbench suite (level 4 is skipped), which then is the default suite of new submissions."""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from tasks import suites
from tasks.models import Task

pytestmark = pytest.mark.django_db


def problem(scale: int) -> str:
    """A KernelBench-format problem whose inputs have `scale` rows: each file differs from the others."""
    return f"""import torch
import torch.nn as nn

ROWS = {scale}


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * {scale}


def get_inputs():
    return [torch.rand(ROWS, 4096)]


def get_init_inputs():
    return []
"""


def write_checkout(root: Path, per_level: dict[int, int]) -> Path:
    """A checkout's layout: KernelBench/level{N}/{id}_{Name}.py (a trailing '_' kept), plus a level 4."""
    for level, count in per_level.items():
        folder = root / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True)
        for problem_id in range(1, count + 1):
            (folder / f"{problem_id}_Problem_{level}_{problem_id}_.py").write_text(
                problem(100 * level + problem_id)
            )
    level4 = root / "KernelBench" / "level4"
    level4.mkdir()
    (level4 / "1_google-bigbird-roberta-base_bs1024_seq32.py").write_text(problem(4000))
    return root


def command(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_levels_1_to_3_become_the_kernelbench_suite_at_full_size_and_level_4_is_skipped(tmp_path):
    checkout = write_checkout(tmp_path, {1: 3, 2: 2, 3: 1})
    report = command("import_tasks", str(checkout))
    assert "kernelbench: 6 task(s): 6 created, 0 new version(s), 0 unchanged" in report
    assert "kernelbench now: L1 3, L2 2, L3 1" in report
    assert "skipped: level4 (only levels 1-3 are imported)" in report
    assert "kernelbench level 1 has 3 of KernelBench's 100 problems" in report
    assert "kernelbench level 3 has 1 of KernelBench's 50 problems" in report

    assert Task.objects.level_counts(suites.KERNELBENCH) == {1: 3, 2: 2, 3: 1}
    assert not Task.objects.filter(level__number=4).exists()
    task = Task.objects.get(suite=suites.KERNELBENCH, level__number=2, problem_id=2)
    written = checkout / "KernelBench" / "level2" / "2_Problem_2_2_.py"
    assert task.name == "2_Problem_2_2_"
    assert task.source == written.read_text()  # the problem as KernelBench ships it: full size
    assert task.cpu_source == ""  # no CPU-sized variant
    assert task.origin == str(written)
    assert task.key == "level_2_problem_2"

    again = command("import_tasks", str(checkout))
    assert "0 created, 0 new version(s), 6 unchanged" in again


def test_the_repository_root_or_its_kernelbench_folder_both_import(tmp_path):
    checkout = write_checkout(tmp_path, {1: 2})
    command("import_tasks", str(checkout / "KernelBench"))
    assert "2 unchanged" in command("import_tasks", str(checkout))


def test_kernelbench_becomes_the_default_suite_once_imported(tmp_path):
    command("import_tasks", "--builtin")
    assert Task.objects.default_suite() == suites.BUILTIN
    before = command("suites")
    assert "tasks:    builtin: L1 9, L2 9, L3 4 (default of new submissions)" in before
    assert "KernelBench is not imported" in before
    assert "manage.py import_tasks" in before

    command("import_tasks", str(write_checkout(tmp_path, {1: 2, 2: 1})))
    assert Task.objects.default_suite() == suites.KERNELBENCH
    after = command("suites")
    assert "tasks:    kernelbench: L1 2, L2 1 (the ranking suite; default of new submissions)" in after
    assert "tasks:    builtin: L1 9, L2 9, L3 4\n" in after
    assert "KernelBench is not imported" not in after
    assert "kernelbench level 2 has 1 of KernelBench's 100 problems" in after
