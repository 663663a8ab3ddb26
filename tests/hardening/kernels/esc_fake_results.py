"""Escape: print a fake result on stdout and write forged harness messages on the result pipe."""

import json
import os
import sys

import torch
import torch.nn as nn

spec_path = os.path.join(os.path.dirname(os.environ["HOME"]), "spec.json")
with open(spec_path, encoding="utf-8") as handle:
    result_fd = json.load(handle)["result_fd"]
sys.stdout.write(json.dumps({"event": "timing", "correct": True, "speedup": {"eager": 1000.0}}) + "\n")
fake = {"event": "correctness", "file": "../../../etc/shadow", "trials": [], "integrity": {}}
os.write(
    result_fd, (json.dumps({"event": "compiled", "seconds": 0}) + "\n" + json.dumps(fake) + "\n").encode()
)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)
