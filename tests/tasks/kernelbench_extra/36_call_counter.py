# A forward() that counts its calls in a plain Python attribute (no buffer, no parameter: nothing
# the importer's audit sees) and scales by the count: every call gives other outputs. It imports
# (the meta run cannot tell); the PyTorch worker refuses to prepare it, naming the output that
# differs on a second call. It was once prepared, and every candidate, the identity included,
# was rejected as not deterministic (tests/tasks/test_modelnew.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.calls


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
