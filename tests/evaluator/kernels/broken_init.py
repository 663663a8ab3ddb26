"""The constructor raises: init_error."""

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        raise ValueError("cannot build")
