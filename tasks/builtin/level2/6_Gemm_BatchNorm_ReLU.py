import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, BatchNorm1d (training mode: batch statistics), ReLU."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features)

    def forward(self, x):
        return torch.relu(self.bn(self.gemm(x)))


batch_size = 2048
in_features = 4096
out_features = 4096


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
