import torch
import torch.nn as nn


class Model(nn.Module):
    """A three-layer perceptron with ReLU."""

    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        layers = []
        current = input_size
        for size in layer_sizes:
            layers += [nn.Linear(current, size), nn.ReLU()]
            current = size
        layers.append(nn.Linear(current, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


batch_size = 1024
input_size = 4096
layer_sizes = [4096, 2048]
output_size = 1024


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, layer_sizes, output_size]
