"""Escape (GPU): take device memory 1 GiB at a time, keeping all of it, until something stops it. The
next kernel of the batch must find the GPU as it was."""

import torch
import torch.nn as nn

hoard = []


class ModelNew(nn.Module):
    def forward(self, x):
        while True:
            hoard.append(torch.ones(1 << 28, dtype=torch.float32, device=x.device))
