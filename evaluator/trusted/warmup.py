"""The tasks' reference processes sized and their torch.compile baselines compiled while the candidates build.

Builds keep the CPUs busy and leave the GPU idle, and nothing is timed then. Meanwhile each task (three at a
time) gets its reference process, which sizes the problem and compiles its baseline into the worker's cache:
the work a task's session would otherwise do at its turn. As many of these processes as fit the batch's
share of the GPU's and the host's memory (one ledger for every warm-up of the batch) stay alive, idle, and
become their tasks' sessions at their turn (only the calibration is left to do there); the others stop, and
their sessions later find the compiled graph and kernels in the cache. Evaluation never overlaps the
warm-up: when the builds end, the tasks in progress are killed and the rest are left to compile at their
turn, as before. A failure here costs nothing but the head start.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from pathlib import Path

from evaluator.sandbox import isolation
from evaluator.trusted.session import CONTEXT_BYTES, TaskSession
from evaluator.trusted.settings import STARTUP_TIMEOUT, Settings

logger = logging.getLogger(__name__)
PARALLEL = 3  # tasks compiled at once: the builds hold most of the CPUs, each task's forward the GPU
AHEAD_TASKS, AHEAD_PARALLEL = 8, 4  # with no build to hide behind: tasks warmed together, and at once
KEPT_SHARE = 8  # the kept processes may hold up to 1/8 of the GPU's memory (weights, context, flush buffer)
KEPT_HOST_SHARE = 4  # and up to 1/4 of the host's (their resident memory: torch, the compiler, CUDA's)


class BaselineWarmup:
    """Compile each task's baseline ahead, in threads, until stop(); a context manager around the builds."""

    def __init__(
        self,
        task_paths: list[Path],
        settings: Settings,
        parallel: int = PARALLEL,
        ledger: KeptLedger | None = None,
    ):
        self.task_paths = task_paths
        self.settings = settings
        self.stopping = threading.Event()
        self.todo: queue.SimpleQueue[Path] = queue.SimpleQueue()
        for path in task_paths:
            self.todo.put(path)
        self.current: set[TaskSession] = set()
        self.lock = threading.Lock()
        count = min(parallel, len(task_paths))
        self.threads = [
            threading.Thread(target=self.run, name=f"baseline-warmup-{index}", daemon=True)
            for index in range(count)
        ]
        self.warmed: list[str] = []
        self.kept: dict[Path, TaskSession] = {}  # sized and compiled, idle until their task's turn
        # A child gets SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG): a thread that
        # started a kept session waits, its work done, until the kept sessions are closed.
        self.done = [threading.Event() for _ in self.threads]
        self.released = threading.Event()
        self.holding: set[int] = set()  # the threads that wait for release
        self.ledger = ledger or KeptLedger.for_batch(settings)

    def __enter__(self) -> BaselineWarmup:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def stop(self) -> None:
        """Kill the tasks in progress (their children), skip the rest, and wait for the threads."""
        self.stopping.set()
        with self.lock:
            for session in self.current:
                session.child.interrupt()
        self.wait()
        for index, thread in enumerate(self.threads):
            if index not in self.holding:
                thread.join()
        logger.info(
            "baselines compiled ahead: %d of %d task(s), %d kept for their turn",
            len(self.warmed),
            len(self.task_paths),
            len(self.kept),
        )

    def wait(self, timeout: float | None = None) -> bool:
        """Until every thread has done its work (those holding kept sessions then wait for release)."""
        return all(done.wait(timeout) for done in self.done)

    def run(self) -> None:
        index = self.threads.index(threading.current_thread())
        holds = False
        try:
            while not self.stopping.is_set():
                try:
                    path = self.todo.get_nowait()
                except queue.Empty:
                    break
                holds = self.run_one(path) or holds
        finally:
            if holds:
                self.holding.add(index)
            self.done[index].set()
        if holds:
            self.released.wait()

    def run_one(self, path: Path) -> bool:
        """Warm one task; whether its session was kept."""
        started = time.monotonic()
        try:
            kept = self.warm(path)
        except Exception as error:  # noqa: BLE001 - a head start lost, nothing more; the task's own
            # session meets any real failure again at its turn and reports it
            if not self.stopping.is_set():
                logger.info("baseline of %s not compiled ahead: %s", path.name, error)
            return False
        if not self.stopping.is_set():
            seconds = time.monotonic() - started
            logger.info("baseline of %s compiled ahead in %.1f s", path.name, seconds)
            with self.lock:
                self.warmed.append(path.name)
        return kept

    def warm(self, path: Path) -> bool:
        session = TaskSession(path, self.settings)
        with self.lock:
            if self.stopping.is_set():
                return False
            session.start()
            self.current.add(session)
        kept = False
        try:
            session.ready = session.talk.expect("ready", STARTUP_TIMEOUT, "startup")
            session.describe()
            if session.unfit is None:
                session.ensure_compiled()
                kept = self.keep(path, session)
        finally:
            with self.lock:
                self.current.discard(session)
            if not kept:
                session.close()
        return kept

    def keep(self, path: Path, session: TaskSession) -> bool:
        """Keep a sized, compiled session for its turn while the batch's idle kept sessions fit their share
        of the GPU's memory and of the host's (the ledger's)."""
        resident = int(session.memory().get("host_bytes") or 0)
        with self.lock:
            if self.stopping.is_set() or path in self.kept:
                return False
            if not self.ledger.admit(session, resident):
                return False
            self.kept[path] = session
            self.current.discard(session)  # in the same breath: stop() interrupts only those in progress
            return True

    def close_kept(self) -> None:
        """Stop the kept sessions no task took (their kernels failed to build, or the batch ended early)."""
        for session in self.kept.values():
            session.close()
        self.kept.clear()
        self.released.set()
        for thread in self.threads:
            if thread.is_alive():
                thread.join()


class KeptLedger:
    """The memory a batch's idle kept sessions hold (sized and compiled, waiting for their task's turn),
    against one share of the GPU's and one of the host's, whichever warm-up kept them. A session leaves the
    ledger when its turn opens it or it is closed."""

    def __init__(self, gpu_bytes: int, host_bytes: int):
        self.gpu_bytes, self.host_bytes = gpu_bytes, host_bytes
        self.lock = threading.Lock()
        self.entries: list[tuple[TaskSession, int, int]] = []  # session, GPU bytes, resident bytes

    @classmethod
    def for_batch(cls, settings: Settings) -> KeptLedger:
        return cls(kept_share(settings), host_share())

    def admit(self, session: TaskSession, resident: int) -> bool:
        """Count the session in if it fits beside the idle ones; whether it did."""
        with self.lock:
            self.entries = [entry for entry in self.entries if idle(entry[0])]
            gpu = sum(entry[1] for entry in self.entries) + kept_bytes(session)
            host = sum(entry[2] for entry in self.entries) + resident
            if gpu > self.gpu_bytes or host > self.host_bytes:
                return False
            self.entries.append((session, kept_bytes(session), resident))
            return True


def idle(session: TaskSession) -> bool:
    return not session.opened and not session.closed


class WarmAhead:
    """With no build to hide behind (a cached batch, the tasks the build-time warm-up did not reach): the
    next tasks' sessions sized and compiled together, several at once, before the first of them is timed.

    Nothing is timed meanwhile: the compiles run side by side instead of one per task at its turn.
    """

    def __init__(self, settings: Settings, ledger: KeptLedger | None = None):
        self.settings = settings
        self.ledger = ledger or KeptLedger.for_batch(settings)
        self.warmups: list[BaselineWarmup] = []
        self.tried: set[Path] = set()

    def worth_it(self, paths: list[Path]) -> bool:
        """Whether these tasks would be warmed together: two or more not tried before (for one alone, the
        reference process started ahead of its turn is quicker)."""
        return sum(path not in self.tried for path in paths) >= 2

    def sessions_for(self, paths: list[Path]) -> dict[Path, TaskSession]:
        """Kept sessions for those of these tasks not tried before (each task is tried once)."""
        if not self.worth_it(paths):
            return {}
        todo = [path for path in paths if path not in self.tried]
        self.tried.update(todo)
        warmup = BaselineWarmup(todo, self.settings, parallel=AHEAD_PARALLEL, ledger=self.ledger)
        self.warmups.append(warmup)  # its threads hold the kept sessions' processes: closed at the end
        with warmup:
            warmup.wait()
        return warmup.kept

    def close(self) -> None:
        for warmup in self.warmups:
            warmup.close_kept()


def kept_bytes(session: TaskSession) -> int:
    """GPU memory an idle kept session holds: its weights, its CUDA context and flush buffer."""
    return session.problem.parameter_bytes + CONTEXT_BYTES["cuda"]


def host_share() -> int:
    """The host memory a batch's idle kept sessions may hold: a quarter of the machine's."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // KEPT_HOST_SHARE
    except (OSError, ValueError):
        return 0


def kept_share(settings: Settings) -> int:
    """The GPU memory a batch's idle kept sessions may hold (none off a GPU)."""
    gpu = settings.environment.get("gpu") or {}
    return int(gpu.get("memory_bytes") or 0) // KEPT_SHARE


def warms_baselines(settings: Settings, builds: int) -> bool:
    """Worth it where there is a build stage to hide it behind and a torch.compile baseline to build."""
    return builds > 0 and warms_ahead(settings)


def warms_ahead(settings: Settings) -> bool:
    """Worth it on a GPU with a torch.compile baseline, where the baseline cache is the worker's alone."""
    return (
        settings.policy.device == "cuda"
        and "compile" in settings.policy.baselines
        and settings.cache is not None
        and isolation.cache_is_private(isolation.detect(settings.python))
    )
