# float64 inputs and outputs (one a transpose of the input). The evaluator's comparison once
# zeroed an f64 reference chunk before comparing with it (.to(torch.float64) of an f64 tensor is
# the tensor itself), so every f64 identity was wrong_output ("expected 0").
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1), x.t()


def get_inputs():
    return [torch.randn(16, 64, dtype=torch.float64)]


def get_init_inputs():
    return []
