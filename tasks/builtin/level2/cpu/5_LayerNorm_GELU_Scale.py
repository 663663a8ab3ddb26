import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """LayerNorm, GELU, then multiply by a scale."""

    def __init__(self, features, scale):
        super().__init__()
        self.norm = nn.LayerNorm(features)
        self.scale = scale

    def forward(self, x):
        return F.gelu(self.norm(x)) * self.scale


batch_size = 64
features = 256
scale = 1.5


def get_inputs():
    return [torch.rand(batch_size, features)]


def get_init_inputs():
    return [features, scale]
