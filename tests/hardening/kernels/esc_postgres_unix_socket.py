"""Escape: reach PostgreSQL through its UNIX socket, which no network namespace covers (trust auth there
would mean the whole database); contained if no socket file is reachable."""

import socket
import sys

import torch
import torch.nn as nn

PATHS = ("/run/postgresql/.s.PGSQL.5432", "/var/run/postgresql/.s.PGSQL.5432", "/tmp/.s.PGSQL.5432")
errors = []
for path in PATHS:
    try:
        with socket.socket(socket.AF_UNIX) as connection:
            connection.connect(path)
            sys.stdout.write(f"ESCAPED postgres socket {path}\n")
            break
    except OSError as error:
        errors.append(error)
else:
    first = errors[0]
    raise type(first)(first.errno, f"no PostgreSQL socket reachable at {PATHS}: {first.strerror}")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
