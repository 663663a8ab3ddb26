"""Hack: every attribute the harness looks up on `torch` in the kernel's process (torch.cuda.synchronize,
torch.empty, …) goes through a class of the kernel's: the module object and every name in it stay the
same, its class does not. This one only counts the lookups, so what is flagged is the swap itself."""

import types

import torch
import torch.nn as nn

LOOKUPS = [0]


class Watching(types.ModuleType):
    def __getattribute__(self, name):
        LOOKUPS[0] += 1
        return super().__getattribute__(name)


torch.__class__ = Watching


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
