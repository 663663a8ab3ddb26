"""Hack: a base class of the kernel's put under one of torch's (nn.ReLU's bases reassigned), so every
method nn.ReLU inherits now resolves through code of the kernel's, though no member of any class was
replaced. This one only counts the calls, so what is flagged is the swap itself."""

import torch.nn as nn

CALLS = [0]


class Counting(nn.Module):
    def __call__(self, *args, **kwargs):
        CALLS[0] += 1
        return super().__call__(*args, **kwargs)


nn.ReLU.__bases__ = (Counting,)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(x)
