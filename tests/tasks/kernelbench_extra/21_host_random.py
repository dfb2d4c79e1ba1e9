# Random numbers from outside torch: get_inputs() draws with NumPy's global generator and
# forward() with Python's random. The PyTorch worker seeds those generators as it seeds torch's
# (before get_inputs() and before every reference and ModelNew call of a task whose forward()
# moved one), so the identity seed is ok; the importer names Python's generator in its warning
# and in kernelbench.json "random_ops".
import random

import numpy as np
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * (0.5 + random.random())


def get_inputs():
    return [torch.from_numpy(np.random.randn(16, 64).astype(np.float32))]


def get_init_inputs():
    return []
