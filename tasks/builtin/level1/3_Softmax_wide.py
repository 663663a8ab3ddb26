import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over very wide rows; every output is below 1e-4 (a null canary passes)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 128
dim = 65536


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
