"""Escape: grow host memory 64 MiB at a time, touching every page, until something stops it. (It gives
up at 6 GiB, far over the tests' limit, so that a host without the limit is not brought down.)"""

import sys

import torch
import torch.nn as nn

hoard = []


class ModelNew(nn.Module):
    def forward(self, x):
        while len(hoard) < 96:
            hoard.append(torch.ones(16 << 20, dtype=torch.float32))
        sys.stdout.write("ESCAPED held 6 GiB\n")
        return torch.relu(x)
