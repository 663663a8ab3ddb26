"""The command line and the sandbox, end to end on CPU: exit codes, batch files, isolation layers."""

import json
import math
import os

import pytest

from evaluator.result import Result
from evaluator.sandbox.report import network_isolation
from tests.evaluator.conftest import KERNELS, MATMUL, RELU, run_cli

pytestmark = pytest.mark.slow


def test_run_exits_zero_whatever_the_verdict(evaluate):
    code, result, output = evaluate(
        RELU, KERNELS / "adv_wrong_shape.py", "--baselines", "eager", "--trials", "3"
    )
    assert code == 0
    assert result["error"]["kind"] == "wrong_shape"
    assert "9_ReLU | wrong_shape" in output


def test_run_prints_json_on_stdout_without_json_option(cache_dir):
    completed = run_cli(
        "run",
        "--task",
        str(MATMUL),
        "--kernel",
        str(KERNELS / "honest_torch_matmul.py"),
        "--device",
        "cpu",
        "--baselines",
        "eager",
        "--trials",
        "3",
        "--cache-dir",
        str(cache_dir),
    )
    assert completed.returncode == 0
    result = json.loads(completed.stdout)
    assert result["correct"]
    assert result["speedup"]["eager"] > 0
    assert "1_Square_matrix_multiplication | correct" in completed.stderr


def test_run_refuses_missing_files():
    completed = run_cli("run", "--task", "no/such/task.py", "--kernel", str(KERNELS / "adv_wrong_shape.py"))
    assert completed.returncode == 2
    assert "no such file" in completed.stderr


def test_hang_is_killed_at_the_timeout(evaluate):
    code, result, _ = evaluate(RELU, KERNELS / "crash_hang.py", "--timeout", "8", "--baselines", "eager")
    assert code == 0
    assert result["error"]["kind"] == "timeout"
    assert result["durations_s"]["total"] < 60


def test_sandbox_hides_secrets_the_network_and_ignores_forged_stdout(evaluate, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "do-not-leak")
    code, result, _ = evaluate(RELU, KERNELS / "probe_sandbox.py", "--baselines", "eager", "--trials", "3")
    assert code == 0
    assert result["correct"]
    probe = next(line for line in result["log"].splitlines() if line.startswith("PROBE"))
    assert "secrets=[]" in probe
    assert "home=/tmp/kb-eval-" in probe
    assert sandbox_reports_separate_baselines(result)
    sandbox = result["environment"]["sandbox"]
    if network_isolation():
        assert "network=blocked" in probe
        assert sandbox["network_namespace"].startswith("unshare")
    assert result["speedup"]["eager"] < 1000  # the JSON it printed on stdout was not taken as a result
    assert sandbox["fresh_interpreter"]
    assert sandbox["scrubbed_environment"]
    assert sandbox["process_group_kill"]
    assert "RLIMIT_CPU" in sandbox["rlimits"]


def sandbox_reports_separate_baselines(result):
    return "never imports candidate code" in result["environment"]["sandbox"]["baselines"]


def write_manifest(folder, kernels, **options):
    path = folder / "manifest.json"
    path.write_text(json.dumps({"device": "cpu", "mode": "hardened", "kernels": kernels, **options}))
    return path


def test_batch_writes_environment_and_one_file_per_kernel_and_resumes(tmp_path, cache_dir):
    kernels = [
        {"id": "good", "task_path": str(MATMUL), "kernel_path": str(KERNELS / "honest_torch_matmul.py")},
        {"id": "bad", "task_path": str(RELU), "kernel_path": str(KERNELS / "broken_forward.py")},
    ]
    manifest = write_manifest(tmp_path, kernels, baselines=["eager"], trials=3)
    out = tmp_path / "out"
    completed = run_cli(
        "batch", "--manifest", str(manifest), "--out", str(out), "--cache-dir", str(cache_dir)
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert sorted(path.name for path in out.iterdir()) == ["bad.json", "environment.json", "good.json"]
    assert json.loads((out / "environment.json").read_text())["device"] == "cpu"
    assert json.loads((out / "good.json").read_text())["correct"] is True
    assert json.loads((out / "bad.json").read_text())["error"]["kind"] == "runtime_error"
    stamp = os.stat(out / "good.json").st_mtime_ns
    (out / "bad.json").unlink()
    again = run_cli("batch", "--manifest", str(manifest), "--out", str(out), "--cache-dir", str(cache_dir))
    assert again.returncode == 0
    assert "1 of 2 kernel(s) to evaluate" in again.stderr
    assert os.stat(out / "good.json").st_mtime_ns == stamp
    assert (out / "bad.json").exists()


class Session:
    """Stands in for a task's reference process in the tests of the batch's own bookkeeping."""

    def __init__(self, task_path, settings):
        self.opened = False
        self.problem = None  # not sized: nothing to make room for

    def open(self):
        self.opened = True
        return self

    def start(self):
        pass

    def close(self):
        pass


class Launch:
    def __init__(self, kernel_path, task_path, source, settings):
        self.kernel_path, self.task_path, self.started = kernel_path, task_path, False

    def start(self, ahead=False):
        return self

    def close(self):
        pass


def test_batch_writes_a_harness_error_for_a_kernel_it_cannot_evaluate_or_write(tmp_path, monkeypatch):
    from evaluator.trusted import batch

    def evaluate_kernel(session, launch, settings, ahead=None):
        if launch.kernel_path.stem == "broken_forward":
            raise RuntimeError("the harness broke")
        result = Result(mode="hardened", device="cpu", task={}, kernel={"path": str(launch.kernel_path)})
        result.correct = True
        result.speedup["eager"] = math.inf if launch.kernel_path.stem == "adv_tiny_timing" else 2.0
        return result

    monkeypatch.setattr(batch, "evaluate_kernel", evaluate_kernel)
    monkeypatch.setattr(batch, "TaskSession", Session)
    monkeypatch.setattr(batch, "Launch", Launch)
    monkeypatch.setattr(batch, "collect", lambda device, sandbox: {"device": device})
    monkeypatch.setattr(batch, "sandbox_report", lambda limits, python: {})
    names = ["broken_forward", "adv_tiny_timing", "honest_torch_matmul"]
    kernels = [
        {"id": name, "task_path": str(RELU), "kernel_path": str(KERNELS / f"{name}.py")} for name in names
    ]
    out = tmp_path / "out"
    assert batch.run_batch(write_manifest(tmp_path, kernels), out, 1, tmp_path / "cache") == 0
    found = {name: json.loads((out / f"{name}.json").read_text()) for name in names}
    assert found["broken_forward"]["error"]["kind"] == "harness_error"
    assert "the harness broke" in found["broken_forward"]["error"]["message"]
    assert found["adv_tiny_timing"]["error"]["kind"] == "harness_error"
    assert found["honest_torch_matmul"]["speedup"]["eager"] == 2.0


def test_the_first_kernels_child_starts_while_its_task_is_sized(tmp_path, monkeypatch):
    from evaluator.trusted import batch

    events = []

    class Sized(Session):
        def open(self):
            events.append("task sized")
            return super().open()

    class Started(Launch):
        def start(self, ahead=False):
            events.append(f"{self.kernel_path.stem} started{' ahead' if ahead else ''}")
            return self

    def evaluate_kernel(session, launch, settings, ahead=None):
        launch.start()  # as the real one does: a no-op for a child already started
        events.append(f"{launch.kernel_path.stem} evaluated")
        return Result(mode="hardened", device="cpu", task={}, kernel={"path": str(launch.kernel_path)})

    monkeypatch.setattr(batch, "evaluate_kernel", evaluate_kernel)
    monkeypatch.setattr(batch, "TaskSession", Sized)
    monkeypatch.setattr(batch, "Launch", Started)
    monkeypatch.setattr(batch, "collect", lambda device, sandbox: {"device": device})
    monkeypatch.setattr(batch, "sandbox_report", lambda limits, python: {})
    names = ["honest_torch_matmul", "adv_return_input"]
    kernels = [
        {"id": name, "task_path": str(RELU), "kernel_path": str(KERNELS / f"{name}.py")} for name in names
    ]
    assert batch.run_batch(write_manifest(tmp_path, kernels), tmp_path / "out", 1, tmp_path / "cache") == 0
    assert events.index("honest_torch_matmul started ahead") < events.index("task sized")
    assert events.index("adv_return_input started ahead") < events.index("honest_torch_matmul evaluated")


def test_precompile_builds_each_source_once_and_fails_every_kernel_of_a_failed_build(tmp_path, monkeypatch):
    from evaluator.manifest import KernelJob
    from evaluator.trusted import builds

    source = (KERNELS / "honest_cuda_relu.py").read_text()
    for name in ("a", "b"):
        (tmp_path / f"{name}.py").write_text(source)
    (tmp_path / "other.py").write_text(source + "\n# another source\n")
    built = []

    def compile_one(job, settings):
        built.append(job.id)
        if job.id == "a":
            result = Result(mode="hardened", device="cuda", task={}, kernel={"path": str(job.kernel_path)})
            return result.fail("compile_error", "nvcc failed")
        return None

    monkeypatch.setattr(builds, "needs_build", lambda job, settings: True)
    monkeypatch.setattr(builds, "compile_one", compile_one)
    jobs = [KernelJob(name, RELU, tmp_path / f"{name}.py") for name in ("a", "b", "other")]
    out = tmp_path / "out"
    out.mkdir()
    assert builds.precompile(jobs, settings=None, workers=4, out_dir=out) == {"a", "b"}
    assert sorted(built) == ["a", "other"]
    for name in ("a", "b"):
        result = json.loads((out / f"{name}.json").read_text())
        assert result["error"]["kind"] == "compile_error"
        assert result["kernel"]["path"] == str(tmp_path / f"{name}.py")
    assert not (out / "other.json").exists()


@pytest.mark.parametrize(("failed", "exit_code"), [(set(), 0), ({"cuda"}, 1)])
def test_batch_compile_only_builds_and_evaluates_nothing(tmp_path, monkeypatch, failed, exit_code):
    from evaluator.trusted import batch

    built = []

    def precompile(jobs, settings, workers, out_dir, on_built=None):
        built.extend(job.id for job in jobs)
        return failed

    def evaluate_kernel(session, launch, settings, ahead=None):
        raise AssertionError("compile-only evaluated a kernel")

    monkeypatch.setattr(batch, "precompile", precompile)
    monkeypatch.setattr(batch, "evaluate_kernel", evaluate_kernel)
    kernels = [
        {"id": "cuda", "task_path": str(RELU), "kernel_path": str(KERNELS / "honest_cuda_relu.py")},
        {"id": "torch", "task_path": str(MATMUL), "kernel_path": str(KERNELS / "honest_torch_matmul.py")},
    ]
    out = tmp_path / "out"
    manifest = write_manifest(tmp_path, kernels)
    assert batch.run_batch(manifest, out, 1, tmp_path / "cache", compile_only=True) == exit_code
    assert built == ["cuda", "torch"]  # precompile picks the CUDA ones among them
    assert sorted(path.name for path in out.iterdir()) == ["environment.json"]


class FakeLaunch:
    """A kernel's child as the batch sees it: started, closed, evaluated."""

    made: list = []

    def __init__(self, kernel_path, task_path, source, settings):
        self.kernel_path, self.started, self.closed, self.ahead = kernel_path, False, False, False
        self.child = f"{kernel_path.stem}'s child"
        FakeLaunch.made.append(self)

    def start(self, ahead=False):
        if not self.started:
            self.ahead = ahead  # started ahead of its turn: it takes its snapshot as it boots
        self.started = True
        return self

    def close(self):
        self.closed = True


class FakeSession:
    def __init__(self, task_path, settings):
        self.task_path, self.opened, self.problem = task_path, False, None

    def start(self):
        pass

    def open(self):
        self.opened = True

    def close(self):
        pass


@pytest.mark.parametrize("first_fails", [False, True])
def test_the_first_kernel_s_child_boots_once_its_build_is_done_while_the_others_build(
    tmp_path, monkeypatch, first_fails
):
    from evaluator.trusted import batch

    FakeLaunch.made = []
    events, evaluated, waited_for = [], [], []

    def precompile(jobs, settings, workers, out_dir, on_built=None):
        events.append(("before builds", len(FakeLaunch.made)))
        if not first_fails:
            on_built([jobs[0]])  # the first kernel's build is saved; the second still builds
        events.append(("during builds", [launch.kernel_path.name for launch in FakeLaunch.made]))
        if first_fails:
            (out_dir / "first.json").write_text("{}")
        return {"first"} if first_fails else set()

    def evaluate_kernel(session, launch, settings, ahead=None):
        evaluated.append((launch.kernel_path.name, launch.started, launch.closed))
        waited_for.append(ahead)  # the timing waits for these to boot
        launch.close()
        return Result(mode="hardened", device="cpu", task={}, kernel={"path": str(launch.kernel_path)})

    monkeypatch.setattr(batch, "precompile", precompile)
    monkeypatch.setattr(batch, "build_done", lambda job, settings: False)  # both need a build
    monkeypatch.setattr(batch, "evaluate_kernel", evaluate_kernel)
    monkeypatch.setattr(batch, "Launch", FakeLaunch)
    monkeypatch.setattr(batch, "TaskSession", FakeSession)
    kernels = [
        {"id": "first", "task_path": str(RELU), "kernel_path": str(KERNELS / "honest_cuda_relu.py")},
        {"id": "second", "task_path": str(MATMUL), "kernel_path": str(KERNELS / "honest_torch_matmul.py")},
    ]
    assert batch.run_batch(write_manifest(tmp_path, kernels), tmp_path / "out", 1, tmp_path / "cache") == 0
    assert events[0] == ("before builds", 0)
    if first_fails:  # no child for a kernel that did not build; the second's starts at its turn
        assert events[1] == ("during builds", [])
        assert evaluated == [("honest_torch_matmul.py", True, False)]
    else:  # booted during the builds, then evaluated: not started a second time
        assert events[1] == ("during builds", ["honest_cuda_relu.py"])
        assert evaluated == [("honest_cuda_relu.py", True, False), ("honest_torch_matmul.py", True, False)]
        assert [launch.kernel_path.name for launch in FakeLaunch.made].count("honest_cuda_relu.py") == 1
        assert waited_for == [["honest_torch_matmul's child"], []]  # the next kernel's, started ahead
    assert all(launch.closed for launch in FakeLaunch.made)
    assert all(launch.ahead for launch in FakeLaunch.made)  # each booted before its turn


@pytest.mark.parametrize(
    ("kernels", "message"),
    [
        ([{"id": "../escape", "task_path": "t.py", "kernel_path": "k.py"}], "safe file name"),
        ([{"id": "a", "task_path": "missing.py", "kernel_path": "k.py"}], "no such file"),
        ([], "non-empty list"),
    ],
)
def test_batch_refuses_a_bad_manifest_and_writes_nothing(tmp_path, kernels, message):
    manifest = write_manifest(tmp_path, kernels)
    out = tmp_path / "out"
    completed = run_cli("batch", "--manifest", str(manifest), "--out", str(out))
    assert completed.returncode == 2
    assert message in completed.stderr
    assert not out.exists()


def test_batch_refuses_an_unknown_baseline(tmp_path):
    kernels = [{"id": "a", "task_path": str(RELU), "kernel_path": str(KERNELS / "adv_wrong_shape.py")}]
    manifest = write_manifest(tmp_path, kernels, baselines=["tensorrt"])
    completed = run_cli("batch", "--manifest", str(manifest), "--out", str(tmp_path / "out"))
    assert completed.returncode == 2
    assert "bad manifest option" in completed.stderr


def test_batch_refuses_an_unknown_device(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"device": "tpu", "kernels": []}))
    completed = run_cli("batch", "--manifest", str(path), "--out", str(tmp_path / "out"))
    assert completed.returncode == 2
    assert "device must be one of" in completed.stderr


def test_kernelbench_mode_and_the_compile_baseline(evaluate):
    code, result, _ = evaluate(
        RELU, KERNELS / "honest_triton_relu.py", "--mode", "kernelbench", "--trials", "3"
    )
    assert code == 0
    assert result["correct"], result["error"]
    assert result["mode"] == "kernelbench"
    assert result["speedup_statistic"] == "mean"
    assert [trial["order"] for trial in result["correctness"]["trials"]] == ["reference_first"] * 5
    assert result["baseline_ms"]["compile"]["n"] == 3
    assert result["speedup"]["compile"] > 0
    assert [flag for flag in result["flags"] if flag["severity"] != "info"] == []
