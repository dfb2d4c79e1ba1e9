# A Python number among get_inputs() drawn from Python's generator: the PyTorch worker gives a
# scalar input one value in every input set, so the importer refuses a scalar that changes from
# one draw to the next (it draws get_inputs() twice, under two seeds).
import random

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, k):
        return x * k


def get_inputs():
    return [torch.randn(16, 64), random.randint(1, 1000)]


def get_init_inputs():
    return []
