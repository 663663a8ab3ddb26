import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear, max over features (kept), minus its own mean, GELU: always zero, so the task is degenerate."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.gemm(x)
        x = torch.max(x, dim=1, keepdim=True).values
        x = x - x.mean(dim=1, keepdim=True)
        return F.gelu(x)


batch_size = 2048
in_features = 4096
out_features = 4096


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
