# A forward() that writes into an output buffer it allocated once (a plain attribute) and returns
# it: every call returns the same tensor. On the host the witness's calls kept views of that
# buffer rather than copies, so every call's outputs read as the last call's: an honest
# candidate (x * 2) was rejected at the full tier ("wrong on inputs drawn after the runner asked,
# read outside its process") while the identity, which aliases alike, was ok
# (tests/tasks/test_modelnew.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = torch.empty(16, 64)

    def forward(self, x):
        torch.mul(x, 2, out=self.buf)
        return self.buf


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
