"""Hack: an honest kernel that tries to inflate the eager baseline's samples by 1000 (a 1000x "speedup").

The baselines are timed in the reference process, which it cannot reach, so it can only rewrite what its
own process reports: it adds forged eager records to its round and inflates its own samples, which then
add up to more time than its timed loop took on the harness's clock."""

import torch
import torch.nn as nn

import evaluator.child.process

_write = evaluator.child.process.write_message


def inflate(fd, message):
    if message.get("event") == "round":
        message["eager"] = [[record[0], record[1] * 1000, record[2], {}] for record in message["records"]]
        for record in message["records"]:
            record[1] = record[1] * 1000
    _write(fd, message)


evaluator.child.process.write_message = inflate


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
