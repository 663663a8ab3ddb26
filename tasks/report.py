"""The task suites as `manage.py suites`, `import_tasks` and `bin/serve` report them: problems per level,
KernelBench levels short of the benchmark's problem count, and how to import KernelBench."""

from leaderboard.models import Level
from tasks import suites
from tasks.importers import BENCHMARK_SLUG
from tasks.models import Task


def level_counts_text(suite: str) -> str:
    """'L1 100, L2 100, L3 50': the current problems of each level of a suite."""
    return ", ".join(f"L{level} {n}" for level, n in Task.objects.level_counts(suite).items())


def short_levels() -> list[str]:
    """A warning for each imported KernelBench level with fewer problems than the benchmark's level."""
    counts = Task.objects.level_counts(suites.KERNELBENCH)
    expected = dict(Level.objects.filter(benchmark__slug=BENCHMARK_SLUG).values_list("number", "task_count"))
    return [
        f"warning:  kernelbench level {level} has {n} of KernelBench's {expected[level]} problems: "
        f"its verified rates are over these {n}"
        for level, n in counts.items()
        if n < expected.get(level, 0)
    ]


def suite_lines() -> list[str]:
    """One line per suite with its problems per level, then warnings, and KernelBench's import hint while
    it is missing."""
    default = Task.objects.default_suite()
    lines = []
    for suite in sorted(set(Task.objects.current().values_list("suite", flat=True))):
        roles = ["the ranking suite"] if suite == suites.KERNELBENCH else []
        roles += ["default of new submissions"] if suite == default else []
        lines.append(
            f"tasks:    {suite}: {level_counts_text(suite)}" + (f" ({'; '.join(roles)})" if roles else "")
        )
    lines += short_levels()
    if not Task.objects.current(suites.KERNELBENCH).exists():
        lines.append(suites.kernelbench_hint())
    return lines
