# nn.MaxPool3d calls max_pool3d_with_indices, which has no meta kernel in torch 1.13: the
# importer learns the output shape from one real run on the CPU (the input is 256 KiB).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.pool = nn.MaxPool3d(kernel_size)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(2, 4, 16, 16, 32)]


def get_init_inputs():
    return [2]
