"""Escape: announce an output chunk larger than a slot, to make the reference read past the shared memory."""

import torch
import torch.nn as nn

import evaluator.child.candidate

original = evaluator.child.candidate.Candidate.cmd_send


def send_too_much(self, message):
    self.emit({"event": "chunk", "slot": 0, "offset": 0, "count": 1 << 40})
    return original(self, message)


evaluator.child.candidate.Candidate.cmd_send = send_too_much


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
