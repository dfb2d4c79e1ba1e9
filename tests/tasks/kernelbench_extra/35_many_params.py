# 700 parameters (the task's inputs after x) and 700 outputs, each output the input times one
# parameter: the worker asked, for every output of every call, whether it shares memory with
# each input and parameter (490,000 comparisons, about 1 s a call on the CPU), and the identity
# timed out at smoke (10 s). Now one set of the storages' addresses per call.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ws = nn.ParameterList([nn.Parameter(torch.randn(2)) for _ in range(n)])

    def forward(self, x):
        return tuple(x * w for w in self.ws)


def get_inputs():
    return [torch.randn(2)]


def get_init_inputs():
    return [700]
