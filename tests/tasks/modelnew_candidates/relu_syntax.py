# Not Python: compile_error naming the line.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x)
        return x
