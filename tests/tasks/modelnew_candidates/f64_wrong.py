# For kernelbench_extra/24_f64_outputs.py: the running sum off by 1e-3 from the second column on
# (wrong_output at the task's f64 tolerance, 1e-4).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        s = torch.cumsum(x, dim=1)
        s[:, 1:] += 1e-3
        return s, x.t()
