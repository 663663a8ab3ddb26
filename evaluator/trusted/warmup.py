"""The torch.compile baselines compiled into the worker's cache while the CUDA candidates build.

Builds keep the CPUs busy and leave the GPU idle, and nothing is timed then. Meanwhile each task (two at a
time) gets a reference process of its own that sizes the problem and compiles its baseline (the work a
task's session would otherwise do at its turn), then stops; the session later finds the compiled graph and
kernels in the cache. Evaluation never overlaps it: when the builds end, the tasks in progress are killed
and the rest are left to compile at their turn, as before. A failure here costs nothing but the head start.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from pathlib import Path

from evaluator.sandbox import isolation
from evaluator.trusted.session import TaskSession
from evaluator.trusted.settings import STARTUP_TIMEOUT, Settings

logger = logging.getLogger(__name__)
PARALLEL = 2  # tasks compiled at once: the builds hold most of the CPUs, each task's forward the GPU


class BaselineWarmup:
    """Compile each task's baseline ahead, in threads, until stop(); a context manager around the builds."""

    def __init__(self, task_paths: list[Path], settings: Settings, parallel: int = PARALLEL):
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
        for thread in self.threads:
            if thread.is_alive():
                thread.join()
        logger.info("baselines compiled ahead: %d of %d task(s)", len(self.warmed), len(self.task_paths))

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                path = self.todo.get_nowait()
            except queue.Empty:
                return
            started = time.monotonic()
            try:
                self.warm(path)
            except Exception as error:  # noqa: BLE001 - a head start lost, nothing more; the task's own
                # session meets any real failure again at its turn and reports it
                if not self.stopping.is_set():
                    logger.info("baseline of %s not compiled ahead: %s", path.name, error)
            else:
                if not self.stopping.is_set():
                    seconds = time.monotonic() - started
                    logger.info("baseline of %s compiled ahead in %.1f s", path.name, seconds)
                    with self.lock:
                        self.warmed.append(path.name)

    def warm(self, path: Path) -> None:
        session = TaskSession(path, self.settings)
        with self.lock:
            if self.stopping.is_set():
                return
            session.start()
            self.current.add(session)
        try:
            session.talk.expect("ready", STARTUP_TIMEOUT, "startup")
            session.describe()
            if session.unfit is None:
                session.ensure_compiled()
        finally:
            with self.lock:
                self.current.discard(session)
            session.close()


def warms_baselines(settings: Settings, builds: int) -> bool:
    """Worth it where there is a build stage to hide it behind and a torch.compile baseline to build."""
    return (
        builds > 0
        and settings.policy.device == "cuda"
        and "compile" in settings.policy.baselines
        and settings.cache is not None
        and isolation.cache_is_private(isolation.detect(settings.python))
    )
