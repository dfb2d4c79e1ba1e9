# For kernelbench_extra/27_nonfinite.py: the reference's outputs with NaN turned into 0 (what a
# kernel that clamps its inputs would give): wrong_output, the first NaN element named.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.exp(80.0 * x) - torch.exp(-80.0 * x)
        return torch.nan_to_num(torch.log(x), nan=0.0), y, torch.sqrt(x)
