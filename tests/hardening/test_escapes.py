"""Escape attempts through the real harness (`python -m evaluator batch`, as the worker runs it), on CPU.

One batch evaluates every kernel of tests/hardening/kernels/ that tries to get out: each must end as its
own failure with a reason that names what stopped it, leave nothing behind on the host, leak none of the
worker's secrets, and the batch must carry on to judge an honest kernel after all of them.
"""

import json
import re

import pytest

from tests.hardening.harness import (
    ESCAPED,
    KERNELS,
    ROOT,
    SECRETS,
    entry,
    file_digest,
    processes_running,
    run_batch,
    sandbox_report,
    task,
)

pytestmark = pytest.mark.slow

RELU = task(1, "9_ReLU")
BLOCKED = ("sandbox_violation", "compile_error", "runtime_error")
# kernel: (error kinds accepted, a fragment the message must hold, the sandbox layer it needs or None).
# A kernel that is honest apart from its attack ("correct") must pass: the attack did not disturb the run.
ESCAPES = {
    "esc_redis_loopback": ({"sandbox_violation"}, "blocked by the sandbox", None),
    "esc_postgres_loopback": ({"sandbox_violation"}, "blocked by the sandbox", None),
    "esc_postgres_unix_socket": (set(BLOCKED), ".s.PGSQL.5432", None),
    "esc_network_interfaces": ({"compile_error"}, "only an isolated loopback: interfaces ['lo']", "network"),
    "esc_read_secrets": ({"sandbox_violation"}, "no secret visible", None),
    "esc_read_settings": (set(BLOCKED), "settings.py", None),
    "esc_write_outside": ({"sandbox_violation"}, "blocked by the sandbox", None),
    "esc_fork_bomb": ({"resource_limit"}, "stopped by a resource limit (EAGAIN)", "process limit"),
    "esc_memory_huge": ({"resource_limit"}, "stopped by a memory limit", None),
    "esc_memory_creep": ({"resource_limit"}, "host memory limit of 1.0 GiB", None),  # cgroup or watch
    "esc_spin_forever": ({"timeout"}, "the process group was killed", None),
    "esc_segfault": ({"crash"}, "killed by SIGSEGV", None),
    "esc_exit_early": ({"crash"}, "ended during correctness (exit status 0)", None),
    "esc_fake_results": ({"sandbox_violation"}, "unexpected message 'imported'", None),
    "esc_tamper_harness": ({"sandbox_violation"}, "blocked by the sandbox", None),
    "esc_chunk_out_of_range": ({"sandbox_violation"}, "malformed output chunk", None),
    "esc_chunk_oversized": ({"sandbox_violation"}, "malformed output chunk", None),
    "esc_fill_temp_dir": ({"resource_limit"}, "ENOSPC", "tmpfs"),
    "esc_orphan_spinner": ("correct", "", "pid"),
    "esc_kill_everything": ("correct", "", "pid"),
}
LIMITS = {"memory_limit_mb": 1024, "max_tasks": 256, "temp_dir_mb": 256}
MARKER = "kb-escape-marker"


def active_layers(report: dict) -> set[str]:
    """Names of the layers the kernels above may depend on, as this host's report says."""
    layers = set()
    if report["network_namespace"]:
        layers.add("network")
    if report["pid_namespace_init"]:
        layers.add("pid")
    if report["cgroup"]:
        layers.add("cgroup")
    if report["cgroup"] or report["unprivileged_user"]:
        layers.add("process limit")  # a pids cgroup, or RLIMIT_NPROC of a user of its own
    if report["temp_dir"].startswith("tmpfs"):
        layers.add("tmpfs")
    return layers


@pytest.fixture(scope="module")
def report():
    return sandbox_report("cpu", **LIMITS)


@pytest.fixture(scope="module")
def escape_batch(tmp_path_factory, report):
    """Every escape kernel this host can contain, in one batch, then the honest kernel last."""
    folder = tmp_path_factory.mktemp("escapes")
    usable = [
        name for name, (_, _, layer) in ESCAPES.items() if layer is None or layer in active_layers(report)
    ]
    entries = [entry(name, RELU) for name in usable] + [entry("honest_relu", RELU)]
    before = file_digest(ROOT / "evaluator" / "child" / "timing.py")
    options = {"baselines": ["eager"], "trials": 3, "run_timeout": 20, **LIMITS}
    completed, results = run_batch(folder, entries, **options)
    return {"completed": completed, "results": results, "timing_py": before, "out": folder / "out"}


def test_every_escape_kernel_is_in_the_table():
    assert {path.stem for path in KERNELS.glob("esc_*.py")} == set(ESCAPES)


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escape_is_contained_with_a_clear_reason(escape_batch, report, name):
    kinds, fragment, layer = ESCAPES[name]
    if layer is not None and layer not in active_layers(report):
        pytest.skip(f"this host lacks the {layer} layer: {report['absent']}")
    result = escape_batch["results"][name]
    assert ESCAPED not in result["log"], result["log"][-2000:]
    if kinds == "correct":
        assert result["correct"], result["error"]
        return
    assert not result["correct"]
    assert result["error"]["kind"] in kinds, result["error"]
    assert fragment in result["error"]["message"], result["error"]["message"][-2000:]
    assert result["speedup"] == {"eager": None, "compile": None}


def test_the_batch_carries_on_and_judges_the_honest_kernel_last(escape_batch):
    assert escape_batch["completed"].returncode == 0, escape_batch["completed"].stderr[-3000:]
    honest = escape_batch["results"]["honest_relu"]
    assert honest["correct"], honest["error"]
    assert honest["speedup"]["eager"] > 0


def test_nothing_is_left_on_the_host(escape_batch):
    package = ROOT / "evaluator"
    for folder in (package, ROOT, ROOT.parent, ROOT / "var"):
        assert not (folder / MARKER).exists(), folder
    assert file_digest(package / "child" / "timing.py") == escape_batch["timing_py"]
    assert processes_running(b"sleep\x004242.5") == []  # the detached grandchild died with its sandbox


def test_no_secret_reaches_a_result_or_a_log(escape_batch):
    text = "".join(path.read_text() for path in escape_batch["out"].glob("*.json"))
    for name, value in SECRETS.items():
        assert value not in text, name
    assert not re.search(r"\broot:[^:\s]*:\d+:", text)  # nothing of /etc/shadow came back through a link


def test_the_environment_reports_every_layer_and_why_others_are_absent(escape_batch, report):
    environment = json.loads((escape_batch["out"] / "environment.json").read_text())
    sandbox = environment["sandbox"]
    assert sandbox == json.loads(json.dumps(report))
    assert sandbox["scrubbed_environment"]
    assert sandbox["process_group_kill"]
    assert {"RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE"} <= set(sandbox["rlimits"])
    layers = {
        "network": sandbox["network_namespace"],
        "pid": sandbox["pid_namespace_init"],
        "root": sandbox["filesystem_isolation"],
        "user": sandbox["unprivileged_user"],
        "landlock": sandbox["landlock"],
        "cgroup": sandbox["cgroup"],
    }
    for layer, value in layers.items():
        assert bool(value) or layer in sandbox["absent"], layer  # on or explained, never silently off
