# An output that is NaN in every element (0/0 for every input): nothing tells a candidate that
# computes it from one that writes nothing (a call's outputs start poisoned with NaN). The
# PyTorch worker refuses to prepare it, naming the output: every evaluation infra_error with
# that reason. The other output, partly NaN, would be compared as values (27_nonfinite.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.log(x), (x - x) / (x - x)


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return []
