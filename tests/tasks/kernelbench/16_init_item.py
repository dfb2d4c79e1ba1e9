# The constructor reads a tensor's value (.item(), as drop-path schedules do): it cannot run on
# the meta device, so the constructor, get_inputs() and forward() run once on the CPU.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        rates = [r.item() for r in torch.linspace(0.5, 1.0, n)]
        self.scales = nn.Parameter(torch.tensor(rates))

    def forward(self, x):
        return x * self.scales


def get_inputs():
    return [torch.randn(8, 4)]


def get_init_inputs():
    return [4]
