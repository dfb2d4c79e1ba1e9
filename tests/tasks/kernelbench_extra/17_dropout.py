# A reference that draws random numbers in forward(): a dropout in training mode (nn.Module's
# default), as KernelBench level 2's 66 and 83 do. Imported with a warning naming the operator
# (kernelbench.json "random_ops"); the PyTorch worker seeds torch's generator alike before every
# reference call and every ModelNew call, so the identity seed matches and a ModelNew without
# the dropout does not (tests/tasks/test_modelnew.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.25)

    def forward(self, x):
        return self.drop(torch.relu(x))


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return []
