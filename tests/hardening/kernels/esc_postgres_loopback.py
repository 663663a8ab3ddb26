"""Escape: reach the worker's PostgreSQL on 127.0.0.1:5432 over TCP; contained if the connection fails."""

import socket
import sys

import torch
import torch.nn as nn

with socket.create_connection(("127.0.0.1", 5432), timeout=3):
    sys.stdout.write("ESCAPED postgres accepted a TCP connection\n")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
