"""Escape: leave a detached grandchild (double fork, new session) running after the evaluation; the
kernel itself is honest. Contained if nothing of it survives its sandbox."""

import os

import torch
import torch.nn as nn

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", "4242.5"])
    os._exit(0)
os.wait()


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
