"""Escape: print a fake result on stdout and write forged harness messages on the result pipe."""

import json
import os
import sys

import torch
import torch.nn as nn

spec_path = os.path.join(os.path.dirname(os.environ["HOME"]), "spec.json")
with open(spec_path, encoding="utf-8") as handle:
    result_fd = json.load(handle)["result_fd"]
sys.stdout.write(json.dumps({"event": "round", "correct": True, "speedup": {"eager": 1000.0}}) + "\n")
forged = [
    {"event": "imported", "seconds": 0, "integrity": {}},
    {"event": "output", "facts": {"exact_tensor": True}, "fingerprint": [], "input_fingerprints": []},
]
os.write(result_fd, "".join(json.dumps(message) + "\n" for message in forged).encode())


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)
