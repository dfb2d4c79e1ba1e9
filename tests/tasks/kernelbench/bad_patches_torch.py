# A task file that replaces a function of torch at module level (a faster GELU in place of
# F.gelu): refused, the name given, and torch set back. The PyTorch worker runs several tasks in
# one process, so another task's reference would have run this GELU; in one import run, the
# files after it got it too (and a polyfill of a function this torch lacks let a later file
# import that needs it).
import torch
import torch.nn as nn
import torch.nn.functional as F


def fast_gelu(x, approximate="none"):
    return x * torch.sigmoid(1.702 * x)


F.gelu = fast_gelu


class Model(nn.Module):
    def forward(self, x):
        return F.gelu(x)


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
