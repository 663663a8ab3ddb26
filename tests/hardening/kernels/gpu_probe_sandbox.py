"""Honest ReLU on the GPU that reports what its sandbox looks like: user, devices, the GPU, the project."""

import os
import sys

import torch
import torch.nn as nn

import evaluator

project = os.path.dirname(os.path.dirname(os.path.abspath(evaluator.__file__)))
sys.stdout.write(
    f"PROBE uid={os.getuid()} gid={os.getgid()} groups={os.getgroups()} devices={sorted(os.listdir('/dev'))} "
    f"cuda={torch.cuda.is_available()} gpu={torch.cuda.get_device_name(0)!r} "
    f"settings_visible={os.path.exists(os.path.join(project, 'leaderboard', 'settings.py'))}\n"
)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
