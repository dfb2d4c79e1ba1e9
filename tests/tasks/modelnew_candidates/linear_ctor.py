# A constructor that is not Model's (no arguments): compile_error naming it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(64, 32)

    def forward(self, x):
        return self.linear(x)
