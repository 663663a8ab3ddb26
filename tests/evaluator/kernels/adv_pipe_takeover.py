"""Hack: the kernel puts a pipe of its own in place of its process's pipe to the harness once timing has
begun (as one that answers the harness's per-call handshake itself, after preparing outputs where nothing
is timed, must): the harness's next request finds the pipes replaced, puts them back and says so."""

import json
import os
import sys

import torch
import torch.nn as nn

calls = []


def result_pipe() -> int:
    """The descriptor the harness's code writes its messages to, from the spec file it was started with."""
    return json.loads(open(sys.argv[1]).read())["result_fd"]


class ModelNew(nn.Module):
    def forward(self, x):
        calls.append(1)
        if len(calls) == 12:  # past the correctness trials, in the first timed round
            _, sink = os.pipe()
            os.dup2(sink, result_pipe())
        return torch.relu(x)
