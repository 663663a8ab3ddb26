"""gunicorn's threaded worker, taking new connections first where a thread is free.

gunicorn's gthread processes share one listening socket and each accepts whatever it can: 32 keep-alive
connections opened at once often all land in one process, which then serves them on one core while the
other idles (measured: 572 req/s against 1,190 with the connections split; docs/performance.md,
"Serving"). While every thread of this worker has a request, it accepts at most one connection per
ACCEPT_HOLD_S, so a process with a free thread takes the connection first, and no connection waits for
long when all are busy. Connections a worker holds are served as before.
"""

import time

from gunicorn.workers.gthread import ThreadWorker

ACCEPT_HOLD_S = 0.01


class BalancedThreadWorker(ThreadWorker):
    """A gthread worker that holds back accepting while all of its threads are busy."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.in_flight = 0  # requests handed to the thread pool and not finished (main thread only)
        self.held_since: float | None = None  # when accepting was held back, while busy

    def enqueue_req(self, conn):
        self.in_flight += 1
        super().enqueue_req(conn)

    def finish_request(self, conn, fs):
        self.in_flight -= 1
        super().finish_request(conn, fs)

    def accept(self, listener):
        super().accept(listener)
        self.held_since = None  # a busy worker waits a full hold before its next one

    def wait_for_and_dispatch_events(self, timeout):
        if self.alive:  # once stopping, gunicorn has stopped accepting for good
            busy = self.in_flight >= self.cfg.threads
            room = self.nr_conns < self.worker_connections and (not busy or self.hold_over())
            self.set_accept_enabled(room)
            if busy and not room:
                timeout = min(timeout, ACCEPT_HOLD_S)
            if not busy:
                self.held_since = None
        super().wait_for_and_dispatch_events(timeout)

    def hold_over(self) -> bool:
        now = time.monotonic()
        if self.held_since is None:
            self.held_since = now
        return now - self.held_since >= ACCEPT_HOLD_S
