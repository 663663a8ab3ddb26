"""The command line that starts a sandboxed child: a fresh isolated interpreter running the boot code."""

from __future__ import annotations

from pathlib import Path

HARNESS_ROOT = Path(__file__).resolve().parents[2]
# Isolated mode (-I ignores every PYTHON* variable, so these are flags): unbuffered output, so what a
# kernel printed is in its log even when the process is killed right after its last message; no .pyc.
CHILD_PYTHON_FLAGS = ("-I", "-u", "-B")

# The child's first lines: confinement before anything else is imported, then the child's role.
BOOT = """
import sys
sys.path.insert(0, {root!r})
from evaluator.sandbox.confine import confine
if confine(sys.argv[1]) == "probe":
    sys.exit(0)
from evaluator.child.process import main
sys.exit(main(sys.argv[1:]))
"""


def child_command(unshare: tuple[str, ...], python: str, spec_path: Path) -> list[str]:
    return [*unshare, python, *CHILD_PYTHON_FLAGS, "-c", BOOT.format(root=str(HARNESS_ROOT)), str(spec_path)]
