# Raises KeyboardInterrupt (a BaseException, not an Exception) from its second forward call:
# before 2026-12-07 it went past the worker's handlers and ended the worker ("killed by
# SIGINT", crash, a new worker). Now crash naming it, the worker going on.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 2:
            raise KeyboardInterrupt()
        return torch.relu(x)
