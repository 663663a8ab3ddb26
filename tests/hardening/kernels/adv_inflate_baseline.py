"""Hack: an honest kernel that rewrites its timing report on the way out, multiplying the eager baseline's
samples by 1000 (a 1000x "speedup"). The claims then add up to more time than the timed loop took."""

import torch
import torch.nn as nn

import evaluator.child

_write = evaluator.child.write_message


def inflate(fd, message):
    if message.get("event") == "timing":
        message["samples"]["eager"] = [value * 1000 for value in message["samples"]["eager"]]
    _write(fd, message)


evaluator.child.write_message = inflate


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
