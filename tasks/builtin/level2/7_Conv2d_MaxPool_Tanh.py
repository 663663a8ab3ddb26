import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolution, 2x2 max pooling, tanh."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return torch.tanh(self.pool(self.conv(x)))


batch_size = 16
in_channels = 32
out_channels = 64
kernel_size = 3
height = 128
width = 128


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
