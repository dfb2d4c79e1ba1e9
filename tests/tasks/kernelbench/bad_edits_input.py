# A reference that changes its input in place, through a view of it: the kernel ABI's inputs
# are read-only, so every faithful candidate would be rejected for the same edit. Refused at
# import, the input named.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        b.view(-1)[:8].mul_(2)
        return a + b


def get_inputs():
    return [torch.randn(16, 16), torch.randn(16, 16)]


def get_init_inputs():
    return []
