# For kernelbench_extra/19_view_outputs.py: the odd columns where the task takes the even ones
# (wrong_output).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, b):
        return x.t(), b.expand(16, 64), x[:, 1::2], x
