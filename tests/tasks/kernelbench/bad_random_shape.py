# get_inputs() whose sizes come from Python's generator: a task has one shape per input, so the
# importer draws get_inputs() under two seeds and refuses a shape that changes (before, the
# importer took the first draw's and the worker failed to prepare the task on another).
import random

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(random.randint(4, 64), 64)]


def get_init_inputs():
    return []
