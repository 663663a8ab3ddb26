"""The task suites by name: KernelBench's own problems (the ranking suite) and the project's built-in ones."""

KERNELBENCH = "kernelbench"
"""A KernelBench checkout's levels 1–3 at full size (100, 100 and 50 problems), imported with
`manage.py import_tasks PATH`: once imported, the default suite of new submissions and the ranking suite."""

BUILTIN = "builtin"
"""The project's own small suite (tasks/builtin, with CPU-sized variants), loaded by `manage.py seed`."""

KERNELBENCH_URL = "https://github.com/ScalingIntelligence/KernelBench"


def kernelbench_hint() -> str:
    """How to import KernelBench, as `bin/serve` and `manage.py suites` print it while it is missing."""
    return (
        "KernelBench is not imported: new submissions are verified over the built-in suite, a separate\n"
        "lane that never ranks among full-suite results. To rank on KernelBench's own problems:\n"
        f"  git clone {KERNELBENCH_URL} ../KernelBench\n"
        "  .venv/bin/python manage.py import_tasks ../KernelBench"
    )
