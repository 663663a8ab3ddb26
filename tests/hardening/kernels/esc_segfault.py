"""Escape: a real segmentation fault (a NULL read), not a signal sent to itself."""

import ctypes

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return ctypes.cast(8, ctypes.POINTER(ctypes.c_double)).contents.value
