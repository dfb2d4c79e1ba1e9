# A task file whose get_inputs() crashes the interpreter in native code (a null read through
# ctypes: SIGSEGV), as a broken C extension would.
import ctypes

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x


def get_inputs():
    ctypes.string_at(0)
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
