# Broken: get_inputs() passes a Python number.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, scale):
        return x * scale


def get_inputs():
    return [torch.randn(8, 8), 3.0]


def get_init_inputs():
    return []
