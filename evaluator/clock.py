"""Seconds per named stage on one monotonic clock, each stage from the end of the one before."""

from __future__ import annotations

import time


class StageClock:
    """lap(name) closes a stage; laps holds the seconds of each, in order."""

    def __init__(self):
        self.laps: dict[str, float] = {}
        self.mark = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = now - self.mark
        self.mark = now
