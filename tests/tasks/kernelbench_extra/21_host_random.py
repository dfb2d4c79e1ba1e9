# Random numbers from outside torch: get_inputs() draws with NumPy's global generator, the
# constructor with both (a column permutation, a scale) and forward() with Python's random. The
# PyTorch worker seeds those generators as it seeds torch's (before get_inputs(), before it
# builds Model or ModelNew, before every reference and ModelNew call of a task whose forward()
# moved one), so the identity seed is ok; the importer names Python's generator in its warning
# and in kernelbench.json "random_ops".
import random

import numpy as np
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("perm", torch.from_numpy(np.random.permutation(64)))
        self.scale = random.random()

    def forward(self, x):
        return x[:, self.perm] * (self.scale + random.random())


def get_inputs():
    return [torch.from_numpy(np.random.randn(16, 64).astype(np.float32))]


def get_init_inputs():
    return []
