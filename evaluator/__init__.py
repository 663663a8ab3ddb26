"""The evaluation harness: runs candidate kernels against KernelBench-format tasks in sandboxed processes.

Importable without Django and without torch: the parent-side orchestration imports torch lazily, and the
RQ worker only ever launches ``python -m evaluator`` as a subprocess.
"""

HARNESS_VERSION = "2.15.0"
RESULT_SCHEMA = 1

__all__ = ["HARNESS_VERSION", "RESULT_SCHEMA"]
