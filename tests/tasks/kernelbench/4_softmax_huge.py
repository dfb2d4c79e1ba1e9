# Softmax over rows of a 4096 x 393216 f32 tensor: 6 GiB, only ever built on the meta device.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 4096
dim = 393216


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
