"""Honest: a ReLU writing into one persistent output buffer (a CUDA-graph-style static output)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = None

    def forward(self, x):
        if self.out is None or self.out.shape != x.shape:
            self.out = torch.empty_like(x)
        torch.clamp(x, min=0, out=self.out)
        return self.out
