# Broken: forward() returns a Python int, not a tensor.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.shape[0]


def get_inputs():
    return [torch.randn(8, 8)]


def get_init_inputs():
    return []
