"""Where a batch's time went, from its message trace (EVALUATOR_TRACE): per child and command, seconds waited.

    python bench/trace_stages.py TRACE [--per-kernel] [--gpu-peaks]

A trace line is `<ms since start> <thread> <file> <role> <'>' sent | '<' received> <command or event>`,
a reply on a GPU then `gpu_peak_mib=<the most GPU memory that child has reserved so far>`.
Each command sent to a child is charged the time until that child's next message, and each received
message the time until the same child's next one (a chunk stream, a timing loop); what is left between
a child's messages is the harness's own. The table sums that by role and command, over the whole batch or
per kernel file; the first and last line of each file give its span. With --gpu-peaks it lists, per child,
the replies after which its reserved GPU peak rose, and by how much: where a problem's memory goes.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("bench.trace")


@dataclass(frozen=True)
class Line:
    ms: float
    label: str
    role: str
    sent: bool
    name: str
    gpu_peak_mib: int | None = None


def read_trace(path: Path) -> list[Line]:
    lines = []
    for text in path.read_text().splitlines():
        parts = text.split()
        peak = None
        if len(parts) == 7 and parts[6].startswith("gpu_peak_mib="):
            peak = int(parts.pop().partition("=")[2])
        if len(parts) != 6 or parts[4] not in "<>":
            continue
        ms, _thread, label, role, direction, name = parts
        lines.append(Line(float(ms), label, role, direction == ">", name, peak))
    return lines


def peak_rises(lines: list[Line]) -> list[tuple[str, str, str, int, int]]:
    """(file, role, the command whose reply showed it, MiB added, the peak after) for each rise of a child's
    reserved GPU peak, in order."""
    rises, peaks, asked = [], {}, {}
    for line in lines:
        child = (line.label, line.role)
        if line.sent:
            asked[child] = line.name
            continue
        if line.gpu_peak_mib is None:
            continue
        before = peaks.get(child, 0)
        if line.gpu_peak_mib > before:
            command = asked.get(child, "start")
            rises.append((line.label, line.role, command, line.gpu_peak_mib - before, line.gpu_peak_mib))
        peaks[child] = max(before, line.gpu_peak_mib)
    return rises


def charged(lines: list[Line]) -> dict[tuple[str, str, str], float]:
    """Seconds charged to (label, role, '>cmd' or '<event'): until the same child's next message."""
    totals: dict[tuple[str, str, str], float] = defaultdict(float)
    by_child: dict[tuple[str, str], list[Line]] = defaultdict(list)
    for line in lines:
        by_child[(line.label, line.role)].append(line)
    for (label, role), own in by_child.items():
        for line, following in zip(own, own[1:], strict=False):
            key = (label, role, (">" if line.sent else "<") + line.name)
            totals[key] += (following.ms - line.ms) / 1e3
    return totals


def spans(lines: list[Line]) -> dict[str, tuple[float, float]]:
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for line in lines:
        first.setdefault(line.label, line.ms)
        last[line.label] = line.ms
    return {label: (first[label] / 1e3, last[label] / 1e3) for label in first}


def table(totals: dict[tuple[str, str, str], float], per_kernel: bool) -> list[tuple[str, float]]:
    summed: dict[str, float] = defaultdict(float)
    for (label, role, name), seconds in totals.items():
        summed[f"{label} {role} {name}" if per_kernel else f"{role} {name}"] += seconds
    return sorted(summed.items(), key=lambda item: -item[1])


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    parser = argparse.ArgumentParser()
    parser.add_argument("trace", type=Path)
    parser.add_argument("--per-kernel", action="store_true")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--gpu-peaks", action="store_true", help="where each child's GPU peak rose")
    args = parser.parse_args()
    lines = read_trace(args.trace)
    if not lines:
        logger.error("no trace lines in %s", args.trace)
        return 1
    logger.info("%d messages over %.1f s", len(lines), (lines[-1].ms - lines[0].ms) / 1e3)
    for label, (start, end) in sorted(spans(lines).items(), key=lambda item: item[1]):
        logger.info("  %-60s %8.1f → %8.1f s (%.1f s)", label, start, end, end - start)
    for key, seconds in table(charged(lines), args.per_kernel)[: args.top]:
        logger.info("%9.2f s  %s", seconds, key)
    if args.gpu_peaks:
        for label, role, command, added, peak in peak_rises(lines):
            logger.info("  %-60s %-9s after %-10s +%6d MiB → %6d MiB", label, role, command, added, peak)
    return 0


if __name__ == "__main__":
    sys.exit(main())
