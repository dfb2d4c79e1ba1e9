# softmax without dim= (torch warns that the implicit dimension is deprecated): imported after
# 33_moves_cwd.py in one run, the warning stays a warning.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return F.softmax(x)


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
