# Outputs that share memory: the same tensor twice, a parameter and its transpose, a buffer, a
# 0-d tensor expanded. The worker copies a ModelNew's outputs into its buffers and then poisons
# the returned tensors (those not an input's, a parameter's or a buffer's): it once poisoned y
# after copying out0 and before copying out1, so the identity was wrong_output (NaN).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 4))
        self.register_buffer("b", torch.randn(4))

    def forward(self, x):
        y = x @ self.w
        return y, y, self.w, self.w.t(), self.b, torch.ones(()).expand(3, 3)


def get_inputs():
    return [torch.randn(5, 8)]


def get_init_inputs():
    return []
