"""Honest: ReLU through PyTorch. Runs after the escapes in a batch: the harness must still judge it."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp_min(x, 0.0)
