# ReLU in place on its input, returned: right values, but the input changed. rejected.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.relu_()
