"""forward calls sys.exit: the kernel's fault (runtime_error), never a harness error."""

import sys

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        sys.exit(3)
