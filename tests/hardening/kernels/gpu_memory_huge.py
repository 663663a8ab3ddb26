"""Escape (GPU): ask for ten times the device's memory at once."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        total = torch.cuda.get_device_properties(x.device).total_memory
        hoard = torch.empty(10 * total // 4, dtype=torch.float32, device=x.device)
        return torch.relu(x) + hoard[0] * 0
