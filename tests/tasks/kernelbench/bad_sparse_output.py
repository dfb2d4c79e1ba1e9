# A forward() returning a sparse tensor: kernelbrain tensors are dense, so the importer refuses
# it, naming the layout (it once imported it and the worker could not prepare the task).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x).to_sparse()


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
