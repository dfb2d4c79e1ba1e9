# A forward() that computes a scale on its first call and keeps it (a plain attribute) for every
# later input: two calls on the same inputs agree, but the references of every input set after
# the first are stale. The PyTorch worker refuses to prepare it (the last set's references
# against a new Model's first call). It was once prepared: an honest candidate (x / max|x|) was
# wrong_output on input set 1 while the identity, which caches alike, was ok
# (tests/tasks/test_modelnew.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = None

    def forward(self, x):
        if self.scale is None:
            self.scale = x.abs().amax()
        return x / self.scale


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
