# For tests/tasks/kernelbench_extra/17_dropout.py: the ReLU without the task's dropout (the
# reference zeroes a quarter of its outputs at random, seeded alike for every call): wrong_output,
# where the identity seed, drawing the same numbers, is ok.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
