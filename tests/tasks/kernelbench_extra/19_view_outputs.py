# Outputs that are views: a transpose, an expanded row, a strided slice and the input itself
# (an alias). The evaluator reads every output as it is, strides and all: the identity seed is
# ok at smoke and at full (where the witness writes each output's bytes), a ModelNew returning
# the other columns in the slice is wrong_output.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, b):
        return x.t(), b.expand(16, 64), x[:, ::2], x


def get_inputs():
    return [torch.randn(16, 64), torch.randn(1, 64)]


def get_init_inputs():
    return []
