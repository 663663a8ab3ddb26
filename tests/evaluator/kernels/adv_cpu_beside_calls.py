"""Hack: more than the one CPU thread a kernel is given, only while its calls run. A process forked at import
works whenever forward does (here it only spins: the class of parallel help the timer cannot see on a CPU)."""

import mmap
import os
import time

import torch
import torch.nn as nn

_inside = mmap.mmap(-1, 1)  # 1 while forward runs
_parent = os.getpid()


def _help():
    spins = 0
    while os.getppid() == _parent:
        if _inside[0]:
            for _ in range(2000):
                spins += 1
        else:
            time.sleep(0.002)


if os.fork() == 0:
    try:
        _help()
    finally:
        os._exit(0)


class ModelNew(nn.Module):
    def forward(self, x):
        _inside[0] = 1
        try:
            until = time.perf_counter() + 0.02  # 20 ms of the kernel's own work beside the helper's
            while time.perf_counter() < until:
                pass
            return torch.relu(x)
        finally:
            _inside[0] = 0
