# Two outputs: the maximum over a dimension and its index (f32 and i64).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        values, indices = torch.max(x, dim=self.dim)
        return values, indices


def get_inputs():
    return [torch.randn(64, 128, 32)]


def get_init_inputs():
    return [2]
