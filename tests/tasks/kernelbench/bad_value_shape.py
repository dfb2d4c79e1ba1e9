# An output whose shape depends on the input values (the positive elements): refused, naming
# the two shapes of two draws. It was once imported with the shape of one draw, and the PyTorch
# worker could then prepare no other input set ("output "out" (outputs[0]) is float32 [2093],
# the task says f32 [2016]").
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.masked_select(x, x > 0)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
