# A forward() that changes its own parameter in place (under no_grad): the parameter is one of
# the task's inputs (the candidate ABI passes weights as inputs, read-only), and every call gives
# other outputs; refused at import, the parameter named.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(64))

    def forward(self, x):
        with torch.no_grad():
            self.w.mul_(1.5)
        return x * self.w


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
