# Reduction: sum over one dimension, kept (the dimension is a constructor argument).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.rand(16, 256, 256)]


def get_init_inputs():
    return [1]
