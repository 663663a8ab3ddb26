"""Escape: fork until something stops it, every child staying alive; contained if the process limit stops
it and nothing survives the sandbox. (Linear, and it gives up at 5000 children so that a host without the
limit is not brought down: then it reports its escape and passes.)"""

import os
import sys
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        for _ in range(5000):
            if os.fork() == 0:
                time.sleep(600)
                os._exit(0)
        sys.stdout.write("ESCAPED forked 5000 processes\n")
        return torch.relu(x)
