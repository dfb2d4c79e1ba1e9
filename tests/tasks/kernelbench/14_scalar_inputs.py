# Python scalars among the forward arguments: a float, an int and a bool. The importer makes
# them 0-d f32, i64 and bool inputs; the module itself must receive the Python values (it
# refuses tensors). numpy is imported, so kernelbench.json lists it under "requires".
import numpy as np
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, scale, shift, flip):
        if not (type(scale) is float and type(shift) is int and type(flip) is bool):
            raise TypeError("scalars must arrive as Python numbers")
        y = x * scale + shift
        return -y if flip else y


def get_inputs():
    return [torch.randn(32, 8), float(np.float32(2.5)), 3, True]


def get_init_inputs():
    return []
