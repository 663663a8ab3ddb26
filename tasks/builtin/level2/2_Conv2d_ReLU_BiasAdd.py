import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolution, ReLU, then a learned per-channel bias."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return torch.relu(self.conv(x)) + self.bias


batch_size = 16
in_channels = 32
out_channels = 64
kernel_size = 3
height = 128
width = 128
bias_shape = (64, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
