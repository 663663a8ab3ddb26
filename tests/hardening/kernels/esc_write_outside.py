"""Escape: leave a file outside the kernel's temp dir (project, harness package, /var/tmp, /, /etc)."""

import os
import sys

import torch
import torch.nn as nn

import evaluator

MARKER = "kb-escape-marker"
package = os.path.dirname(os.path.abspath(evaluator.__file__))
targets = [package, os.path.dirname(package), "/var/tmp", "/", "/usr/local", "/etc"]
errors = []
for folder in targets:
    try:
        with open(os.path.join(folder, MARKER), "w") as handle:
            handle.write("escaped")
        sys.stdout.write(f"ESCAPED wrote into {folder}\n")
    except OSError as error:
        errors.append(error)
if len(errors) == len(targets):
    raise errors[0]


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
