"""Escape: burn CPU forever in forward; contained by the wall-clock timeout and the kill."""

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        count = 0
        while True:
            count += 1
