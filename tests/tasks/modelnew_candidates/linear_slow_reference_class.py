# Slows down what it is compared with through the class of the task's submodule: replaces
# nn.Linear.forward with one that sleeps 200 us unless the candidate itself is calling (its own
# layer is a subclass whose forward is its own). rejected (torch.nn.Linear.forward was
# replaced), not ok.
import time

import torch.nn as nn
import torch.nn.functional as F

REAL_FORWARD = nn.Linear.forward


def slow_forward(self, x):
    time.sleep(0.0002)
    return REAL_FORWARD(self, x)


class Fast(nn.Linear):
    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = Fast(in_features, out_features)
        nn.Linear.forward = slow_forward

    def forward(self, x):
        return self.linear(x)
