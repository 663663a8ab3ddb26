"""Escape: ask for a terabyte of host memory at once."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        hoard = torch.ones(1 << 38, dtype=torch.float32)
        return torch.relu(x) + hoard[0] * 0
