"""Escape: change the harness's files: its code, the inputs, the spec, and the log (a link to a secret)."""

import os
import sys

import torch
import torch.nn as nn

import evaluator

package = os.path.dirname(os.path.abspath(evaluator.__file__))
temp_dir = os.path.dirname(os.environ["HOME"])


def append(path, data, mode="a"):
    with open(path, mode) as handle:
        handle.write(data)


def relink_log():
    log = os.path.join(temp_dir, "child.log")
    os.unlink(log)
    os.symlink("/etc/shadow", log)


attempts = {
    "harness code": lambda: append(os.path.join(package, "timing.py"), "\n# tampered\n"),
    "inputs": lambda: append(os.path.join(temp_dir, "inputs.pt"), b"tampered", "r+b"),
    "spec": lambda: append(os.path.join(temp_dir, "spec.json"), " "),
    "log": relink_log,
}
errors = []
for name, attempt in attempts.items():
    try:
        attempt()
        sys.stdout.write(f"ESCAPED tampered with {name}\n")
    except OSError as error:
        errors.append(error)
if len(errors) == len(attempts):
    raise errors[0]


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
