import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, sigmoid, sum over features."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x):
        return torch.sum(torch.sigmoid(self.linear(x)), dim=1, keepdim=True)


batch_size = 64
input_size = 256
hidden_size = 128


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size]
