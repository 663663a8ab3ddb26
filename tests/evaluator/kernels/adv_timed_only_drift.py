"""Hack: exact where it thinks it is checked, off by 5x the fp32 tolerance where it thinks it is timed (the
cyclic collector off, as only timed loops once had it, or a seed wider than the trials' 32 bits): inside
the ten-fold slack a fingerprint's sums allow, so only the sampled values, held to the trials' rule, and
trials indistinguishable from timed calls can catch it."""

import gc

import torch
import torch.nn as nn


def looks_timed() -> bool:
    return not gc.isenabled() or torch.initial_seed() >= 2**32


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.matmul(a, b)
        return out * (1 + 5e-4) if looks_timed() else out
