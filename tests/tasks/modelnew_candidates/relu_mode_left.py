# Enters a torch dispatch mode and never leaves it: every later torch operation of the process,
# the evaluator's comparisons included, would go through the candidate's code first. rejected
# ("changed the evaluator: torch dispatch modes entered was 0, is 1").
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode


class Spy(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


Spy().__enter__()


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
