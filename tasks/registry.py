"""The task registry (pure Python): the built-in suite and KernelBench checkouts as task specs."""

from __future__ import annotations

import ast
import functools
import os
import re
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from evaluator.sources import kernelbench_hash
from tasks import suites

BUILTIN_ROOT = Path(__file__).resolve().parent / "builtin"
CPU_SIZES = BUILTIN_ROOT / "cpu_sizes.toml"
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


def read_spec(path: Path, suite: str, level: int, cpu_sizes: dict | None = None) -> TaskSpec:
    problem_id, name = parse_problem_name(path)
    source = path.read_text(encoding="utf-8")
    check_task_source(source, str(path))
    cpu_source = resize(source, cpu_sizes, str(path)) if cpu_sizes else ""
    return TaskSpec(suite, level, problem_id, name, source, cpu_source, content_hash(source), str(path))


def level_files(folder: Path) -> list[Path]:
    files = [path for path in folder.glob("*.py") if PROBLEM_FILE.match(path.name)]
    return sorted(files, key=lambda path: parse_problem_name(path)[0])


@functools.cache
def cpu_sizes(path: Path = CPU_SIZES) -> dict[str, dict]:
    """'level{N}/{id}_{Name}' → the module constants its CPU-sized variant replaces."""
    return tomllib.loads(path.read_text(encoding="utf-8"))


def resize(source: str, constants: dict, origin: str) -> str:
    """The same problem with some module-level constants replaced (a tuple constant stays a tuple)."""
    assignments = {
        node.targets[0].id: node
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
    }
    unknown = sorted(set(constants) - set(assignments))
    if unknown:
        raise TaskFileError(f"{origin}: no module-level {', '.join(unknown)} to resize")
    lines = source.splitlines(keepends=True)
    for name in sorted(constants, key=lambda n: assignments[n].lineno, reverse=True):
        node, value = assignments[name], constants[name]
        if isinstance(node.value, ast.Tuple) and isinstance(value, list):
            value = tuple(value)
        lines[node.lineno - 1 : node.end_lineno] = [f"{name} = {value!r}\n"]
    resized = "".join(lines)
    check_task_source(resized, origin)
    return resized


def builtin_tasks(root: Path = BUILTIN_ROOT) -> list[TaskSpec]:
    """The project's own suite: level{N}/{id}_{Name}.py; each has a CPU-sized variant (cpu_sizes.toml)."""
    sizes = cpu_sizes(root / CPU_SIZES.name)
    specs = []
    for level in LEVELS:
        for path in level_files(root / f"level{level}"):
            key = f"level{level}/{path.stem}"
            if key not in sizes:
                raise TaskFileError(f"{path}: no CPU-sized variant in {CPU_SIZES.name}")
            specs.append(read_spec(path, suites.BUILTIN, level, sizes[key]))
    return specs


def cpu_task_file(level: int, name: str, root: Path | None = None) -> Path:
    """A built-in problem's CPU-sized variant as a file (level{N}/{id}_{Name}.py under a temp folder, so
    the harness still reads the level and id from its path)."""
    spec = next(s for s in builtin_tasks() if (s.level, s.name) == (level, name))
    folder = (root or Path(tempfile.gettempdir()) / "kb-cpu-tasks" / spec.content_hash) / f"level{level}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    if not path.exists() or path.read_text(encoding="utf-8") != spec.cpu_source:
        staged = path.with_suffix(f".{os.getpid()}.tmp")
        staged.write_text(spec.cpu_source, encoding="utf-8")
        staged.replace(path)  # atomic: a concurrent reader sees the old file or the new one
    return path


def kernelbench_root(checkout: Path) -> Path:
    """The folder holding level1..3: the checkout's KernelBench/ folder, or the path itself."""
    for candidate in (checkout / "KernelBench", checkout):
        if (candidate / "level1").is_dir():
            return candidate
    raise TaskFileError(f"{checkout}: no KernelBench/level1 folder (is this a KernelBench checkout?)")


def skipped_levels(checkout: Path) -> list[str]:
    """The checkout's level folders beyond levels 1–3 (KernelBench's level 4 and any later ones)."""
    root = kernelbench_root(checkout)
    found = [path.name for path in root.glob("level*") if path.is_dir()]
    return sorted(name for name in found if name not in {f"level{level}" for level in LEVELS})


def kernelbench_tasks(checkout: Path) -> list[TaskSpec]:
    """Problems of a KernelBench checkout's levels 1–3, keeping ids, names (trailing '_' too) and hashes."""
    root = kernelbench_root(checkout)
    specs = []
    for level in LEVELS:
        folder = root / f"level{level}"
        if folder.is_dir():
            specs.extend(read_spec(path, suites.KERNELBENCH, level) for path in level_files(folder))
    if not specs:
        raise TaskFileError(f"{checkout}: no problem files in level1..3")
    return specs
