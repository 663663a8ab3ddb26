"""Escape: look for a network interface beyond an isolated loopback (by socket API and sysfs)."""

import os
import socket
import sys

import torch
import torch.nn as nn

names = sorted({name for _, name in socket.if_nameindex()} | set(os.listdir("/sys/class/net")))
if names != ["lo"]:
    sys.stdout.write(f"ESCAPED interfaces {names}\n")
else:
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=2).close()
        sys.stdout.write("ESCAPED loopback is up\n")
    except ConnectionRefusedError:
        sys.stdout.write("ESCAPED loopback is up (connection refused by a listener-less port)\n")
    except OSError as error:
        raise RuntimeError(f"only an isolated loopback: interfaces {names}, {error}") from None


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
