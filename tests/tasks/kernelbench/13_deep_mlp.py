# A deep MLP: twenty nn.Linear layers give forty parameters, which with the input make 41 task
# inputs (more than the 16 the importer once allowed).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return [16, 20]
