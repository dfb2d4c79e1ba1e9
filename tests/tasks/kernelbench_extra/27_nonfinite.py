# Outputs that are not finite in the reference itself: log and sqrt of normal inputs are NaN
# for the negative half, exp(80 x) overflows f32 to inf (and to 0) for a part of them. The
# PyTorch worker compares such elements as values (NaN for NaN, the same infinity), the finite
# ones with the tolerance. Before, it refused every input set at prepare ("the oracle's output
# "out0" of input set 0 is not finite"): the task imported, and no candidate, the identity
# included, got a verdict.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.log(x), torch.exp(80.0 * x) - torch.exp(-80.0 * x), torch.sqrt(x)


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return []
