"""Store task specs as versioned Task rows: idempotent, a changed problem gets a new version."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.db import transaction

from leaderboard.models import Level
from tasks.models import Task
from tasks.registry import TaskSpec

BENCHMARK_SLUG = "kernelbench"


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    new_versions: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{len(self.created)} created, {len(self.new_versions)} new version(s), "
            f"{len(self.unchanged)} unchanged"
        )


def check_unique(specs: list[TaskSpec]) -> None:
    counts = Counter((spec.suite, spec.level, spec.problem_id) for spec in specs)
    repeated = [f"L{level}/{pid}" for (_, level, pid), count in counts.items() if count > 1]
    if repeated:
        raise ValueError(f"problem ids appear more than once: {', '.join(sorted(repeated))}")


def levels_by_number(specs: list[TaskSpec]) -> dict[int, Level]:
    numbers = {spec.level for spec in specs}
    levels = {level.number: level for level in Level.objects.filter(benchmark__slug=BENCHMARK_SLUG)}
    missing = sorted(numbers - set(levels))
    if missing:
        raise ValueError(f"no KernelBench level {missing} in the database (run migrations)")
    return levels


def is_same(task: Task, spec: TaskSpec) -> bool:
    return (task.content_hash, task.name, task.cpu_source) == (spec.content_hash, spec.name, spec.cpu_source)


def store_spec(spec: TaskSpec, level: Level, report: ImportReport) -> Task:
    """Keep the current version if it matches; otherwise retire it and add the next version."""
    versions = Task.objects.select_for_update().filter(
        suite=spec.suite, level=level, problem_id=spec.problem_id
    )
    current = versions.filter(is_current=True).first()
    if current is not None and is_same(current, spec):
        report.unchanged.append(spec.key)
        return current
    next_version = 1 + max((task.version for task in versions), default=0)
    if current is not None:
        current.is_current = False
        current.save(update_fields=["is_current"])
        report.new_versions.append(spec.key)
    else:
        report.created.append(spec.key)
    return Task.objects.create(
        suite=spec.suite,
        level=level,
        problem_id=spec.problem_id,
        name=spec.name,
        version=next_version,
        content_hash=spec.content_hash,
        source=spec.source,
        cpu_source=spec.cpu_source,
        is_current=True,
        origin=spec.origin[:500],
    )


def import_specs(specs: list[TaskSpec]) -> ImportReport:
    """All or nothing: every spec is checked first, then stored in one transaction."""
    check_unique(specs)
    levels = levels_by_number(specs)
    report = ImportReport()
    with transaction.atomic():
        for spec in specs:
            store_spec(spec, levels[spec.level], report)
    return report
