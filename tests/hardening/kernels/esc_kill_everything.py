"""Escape: SIGKILL every process it may signal (kill -1), hoping to take the harness and the worker down;
the kernel is honest otherwise, so the batch must carry on and judge it. It refuses to fire outside a
PID namespace, where kill -1 would reach the whole machine."""

import contextlib
import os
import signal

import torch
import torch.nn as nn

if os.getpid() > 3:
    raise RuntimeError("not in a PID namespace: kill(-1) not attempted")
with contextlib.suppress(ProcessLookupError):  # nothing it may signal: the contained outcome
    os.kill(-1, signal.SIGKILL)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
