"""Short kernels (10-50 µs): our harness, KernelBench's and triton.testing.do_bench, side by side.

    python bench/evaluator_short_kernels.py KERNELBENCH_SRC OUT.json

For a ReLU at three sizes (about 10, 30 and 60 µs on an H200) and two candidates (an honest Triton ReLU and
the identity, `return x`), it reports the candidate's and the eager reference's per-call time as measured by
our harness in kernelbench mode and in hardened mode, by KernelBench's eval_kernel_against_ref, and by
do_bench (the Triton project's own benchmark loop, a third opinion), each speedup, and their ratios. Beside
do_bench, the host time one call takes to return (launch overhead, no sync inside) in a plain process, before
and after `import torch._dynamo` (our candidate process imports it on CUDA), and bench/short_kernel_stages.py
(our timed call in a plain process, the candidate process's state added piece by piece). GPU only.
SHORT_SIZES and SHORT_CANDIDATES (comma-separated names) choose a subset.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
logger = logging.getLogger("bench.short")
SIZES = {"16MiB": (1024, 4096), "64MiB": (4096, 4096), "256MiB": (8192, 8192)}
CHOSEN = os.environ.get("SHORT_SIZES", ",".join(SIZES)).split(",")
TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.rand({rows}, {columns})]


def get_init_inputs():
    return []
"""
CANDIDATES = {
    "triton_relu": ROOT / "tests" / "evaluator" / "kernels" / "honest_triton_relu.py",
    "identity": ROOT / "tests" / "evaluator" / "kernels" / "adv_return_input.py",
}
CHOSEN_CANDIDATES = os.environ.get("SHORT_CANDIDATES", ",".join(CANDIDATES)).split(",")


def ours(task: Path, kernel: Path, mode: str, sandbox: bool = True) -> dict:
    env = dict(os.environ)
    if not sandbox:  # every layer off: whether the sandbox itself costs time
        env["EVALUATOR_SANDBOX_DISABLE"] = "network,pid,root,user,landlock,cgroup,tmpfs"
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "result.json"
        command = [sys.executable, "-m", "evaluator", "run", "--task", str(task), "--kernel", str(kernel)]
        command += ["--device", "cuda", "--mode", mode, "--baselines", "eager", "--json", str(out)]
        subprocess.run(command, cwd=ROOT, check=False, capture_output=True, env=env)
        if not out.exists():
            return {"error": "no result"}
        result = json.loads(out.read_text())
    statistic = result["speedup_statistic"]
    statistic = "median" if statistic == "round_pairs" else statistic  # each side's times: their medians
    runtime, eager = result.get("runtime_ms") or {}, (result.get("baseline_ms") or {}).get("eager") or {}
    return {
        "correct": result["correct"],
        "kernel_ms": runtime.get(statistic),
        "reference_ms": eager.get(statistic),
        "speedup": result["speedup"]["eager"],
        "statistic": statistic,
    }


def do_bench(task: Path, kernel: Path) -> dict:
    """triton.testing.do_bench on the candidate and the reference, same inputs (mean, L2 cleared)."""
    code = f"""
import importlib.util, json, time, torch, triton.testing as tt
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path); module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module); return module
task, kernel = load({str(task)!r}, "task"), load({str(kernel)!r}, "kernel")
torch.manual_seed(42)
x = [v.cuda() for v in task.get_inputs()]
reference, candidate = task.Model().cuda(), kernel.ModelNew().cuda()
def launch_us(fn, calls=200):
    total = 0
    for _ in range(calls):
        torch.cuda.synchronize()
        start = time.perf_counter_ns()
        fn()
        total += time.perf_counter_ns() - start
    torch.cuda.synchronize()
    return total / calls / 1e3
with torch.no_grad():
    r = tt.do_bench(lambda: reference(*x), warmup=25, rep=200, return_mode="mean")
    c = tt.do_bench(lambda: candidate(*x), warmup=25, rep=200, return_mode="mean")
    launch = {{"kernel": launch_us(lambda: candidate(*x)), "reference": launch_us(lambda: reference(*x))}}
    import torch._dynamo
    launch["kernel_after_dynamo"] = launch_us(lambda: candidate(*x))
    launch["reference_after_dynamo"] = launch_us(lambda: reference(*x))
print(json.dumps({{"kernel_ms": c, "reference_ms": r, "speedup": r / c, "launch_us": launch}}))
"""
    return json_report([sys.executable, "-c", code])


def json_report(command: list[str], env: dict[str, str] | None = None) -> dict:
    """A side script's last stdout line as JSON, or the tail of its stderr."""
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False, env=env)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": done.stderr[-500:]}


def in_process_stages(task: Path, kernel: Path) -> dict:
    """Our timed call in a plain process, the candidate process's state added piece by piece."""
    script = ROOT / "bench" / "short_kernel_stages.py"
    return json_report([sys.executable, str(script), str(task), str(kernel)])


def kernelbench(source: Path, task: Path, kernel: Path) -> dict:
    command = [sys.executable, str(ROOT / "bench" / "evaluator_agreement.py"), "--one", str(source)]
    return json_report(command + [str(task), str(kernel)])


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    source, out_path = Path(sys.argv[1]), Path(sys.argv[2])
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size, (rows_, columns) in ((size, SIZES[size]) for size in CHOSEN):
            task = Path(folder) / f"relu_{size}.py"
            task.write_text(TASK.format(rows=rows_, columns=columns))
            for name, kernel in ((name, CANDIDATES[name]) for name in CHOSEN_CANDIDATES):
                row = {"size": size, "candidate": name, "do_bench": do_bench(task, kernel)}
                row["in_process_stages"] = in_process_stages(task, kernel)
                row["kernelbench"] = kernelbench(source, task, kernel)
                row["ours_kernelbench_mode"] = ours(task, kernel, "kernelbench")
                row["ours_hardened"] = ours(task, kernel, "hardened")
                row["ours_kernelbench_mode_no_sandbox"] = ours(task, kernel, "kernelbench", sandbox=False)
                rows.append(row)
                out_path.write_text(json.dumps(rows, indent=1))
                logger.info("%s", json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
