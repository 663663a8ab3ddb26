"""The task registry (pure Python): the built-in suite and KernelBench checkouts as task specs."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from evaluator.sources import kernelbench_hash

BUILTIN_ROOT = Path(__file__).resolve().parent / "builtin"
PROBLEM_FILE = re.compile(r"^(\d+)_(\w+)\.py$")
LEVELS = (1, 2, 3)
REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")


class TaskFileError(ValueError):
    """A file that is not a usable KernelBench-format problem."""


@dataclass(frozen=True)
class TaskSpec:
    """One problem: where it sits (suite, level, id, name), its code, a CPU-sized variant, its hash."""

    suite: str
    level: int
    problem_id: int
    name: str
    source: str
    cpu_source: str
    content_hash: str
    origin: str

    @property
    def key(self) -> str:
        return f"level_{self.level}_problem_{self.problem_id}"


def content_hash(source: str) -> str:
    """KernelBench's problem hash: MD5 of the code without docstrings, comments and whitespace."""
    return kernelbench_hash(source)


def parse_problem_name(path: Path) -> tuple[int, str]:
    """(problem id, name) from '{id}_{Name}.py'; the name keeps KernelBench's trailing underscores."""
    match = PROBLEM_FILE.match(path.name)
    if not match:
        raise TaskFileError(f"{path}: a problem file is named '{{id}}_{{Name}}.py'")
    return int(match.group(1)), path.name.removesuffix(".py")


def check_task_source(source: str, origin: str) -> None:
    """The file parses and defines Model, get_inputs and get_init_inputs at module level."""
    try:
        tree = ast.parse(source, filename=origin)
    except SyntaxError as error:
        raise TaskFileError(f"{origin}: not valid Python ({error.msg}, line {error.lineno})") from error
    defined = {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    }
    missing = [name for name in REQUIRED_NAMES if name not in defined]
    if missing:
        raise TaskFileError(f"{origin}: defines no {', '.join(missing)}")


def read_spec(path: Path, suite: str, level: int, cpu_path: Path | None = None) -> TaskSpec:
    problem_id, name = parse_problem_name(path)
    source = path.read_text(encoding="utf-8")
    check_task_source(source, str(path))
    cpu_source = ""
    if cpu_path is not None and cpu_path.is_file():
        cpu_source = cpu_path.read_text(encoding="utf-8")
        check_task_source(cpu_source, str(cpu_path))
    return TaskSpec(suite, level, problem_id, name, source, cpu_source, content_hash(source), str(path))


def level_files(folder: Path) -> list[Path]:
    files = [path for path in folder.glob("*.py") if PROBLEM_FILE.match(path.name)]
    return sorted(files, key=lambda path: parse_problem_name(path)[0])


def builtin_tasks(root: Path = BUILTIN_ROOT) -> list[TaskSpec]:
    """The project's own suite: level{N}/{id}_{Name}.py, with the CPU-sized variant in level{N}/cpu/."""
    specs = []
    for level in LEVELS:
        folder = root / f"level{level}"
        for path in level_files(folder):
            specs.append(read_spec(path, "builtin", level, folder / "cpu" / path.name))
    return specs


def kernelbench_root(checkout: Path) -> Path:
    """The folder holding level1..3: the checkout's KernelBench/ folder, or the path itself."""
    for candidate in (checkout / "KernelBench", checkout):
        if (candidate / "level1").is_dir():
            return candidate
    raise TaskFileError(f"{checkout}: no KernelBench/level1 folder (is this a KernelBench checkout?)")


def kernelbench_tasks(checkout: Path) -> list[TaskSpec]:
    """Problems of a KernelBench checkout's levels 1–3, keeping ids, names (trailing '_' too) and hashes."""
    root = kernelbench_root(checkout)
    specs = []
    for level in LEVELS:
        folder = root / f"level{level}"
        if folder.is_dir():
            specs.extend(read_spec(path, "kernelbench", level) for path in level_files(folder))
    if not specs:
        raise TaskFileError(f"{checkout}: no problem files in level1..3")
    return specs
