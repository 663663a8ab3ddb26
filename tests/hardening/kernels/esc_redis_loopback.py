"""Escape: talk to the worker's Redis on 127.0.0.1:6379 (the queue); contained if the connection fails."""

import socket
import sys

import torch
import torch.nn as nn

with socket.create_connection(("127.0.0.1", 6379), timeout=3) as connection:
    connection.sendall(b"PING\r\n")
    sys.stdout.write(f"ESCAPED redis answered {connection.recv(64)}\n")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
