# Elementwise: ReLU of a 2048x2752 tensor (written for kernelbrain's tests, KernelBench format).
# Its output, 22.5 MB a call, is over a third of the witness's 64 MiB a request: the witness
# compares a sample of 2^20 positions of each call's output, drawn after that call returned
# (docs/sandbox.md, "The witness").
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(2048, 2752)]


def get_init_inputs():
    return []
