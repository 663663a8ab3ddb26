"""Imports a module that does not exist: compile_error."""

import a_module_that_does_not_exist  # noqa: F401
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x
