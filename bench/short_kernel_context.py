"""Whether a short kernel's extra time comes from the process it runs in: bench/short_kernel_stages.py run
as a plain script, then as our children run (isolated interpreter, the scrubbed environment and variables
the harness gives them), then so again beside an idle process holding a CUDA context on the same GPU (our
reference process, waiting for its turn).

    python bench/short_kernel_context.py OUT.json

The task is a 16 MiB ReLU and the candidate the honest Triton ReLU, as in bench/evaluator_short_kernels.py.
GPU only; writes OUT.json after every context.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.evaluator_short_kernels import CANDIDATES, SIZES, TASK, json_report  # noqa: E402
from evaluator.policy import make_policy  # noqa: E402
from evaluator.sandbox.boot import CHILD_PYTHON_FLAGS  # noqa: E402
from evaluator.sandbox.process import scrubbed_environment  # noqa: E402
from evaluator.trusted.settings import Settings, child_environment  # noqa: E402

logger = logging.getLogger("bench.short_context")
STAGES = ROOT / "bench" / "short_kernel_stages.py"
IDLE_CONTEXT = "import time, torch; torch.ones(1, device='cuda'); print('up', flush=True); time.sleep(900)"


def child_like(home: Path) -> dict[str, str]:
    """The variables a GPU child of the harness gets (scrubbed, with the harness's own)."""
    return scrubbed_environment(home, child_environment(Settings(policy=make_policy("hardened", "cuda"))))


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    out = Path(sys.argv[1])
    report: dict = {}
    with tempfile.TemporaryDirectory() as folder:
        task = Path(folder) / "relu_16MiB.py"
        task.write_text(TASK.format(rows=SIZES["16MiB"][0], columns=SIZES["16MiB"][1]))
        arguments = [str(STAGES), str(task), str(CANDIDATES["triton_relu"])]
        home = Path(folder) / "home"
        home.mkdir()
        isolated = [sys.executable, *CHILD_PYTHON_FLAGS, *arguments]
        report["plain"] = json_report([sys.executable, *arguments])
        out.write_text(json.dumps(report, indent=1))
        report["child_process"] = json_report(isolated, child_like(home))
        out.write_text(json.dumps(report, indent=1))
        idle = subprocess.Popen([sys.executable, "-c", IDLE_CONTEXT], stdout=subprocess.PIPE, text=True)
        try:
            idle.stdout.readline()  # its context is up
            report["child_process_beside_an_idle_context"] = json_report(isolated, child_like(home))
        finally:
            idle.kill()
            idle.wait()
        out.write_text(json.dumps(report, indent=1))
    logger.info("%s", json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
