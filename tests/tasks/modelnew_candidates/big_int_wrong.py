# For kernelbench_extra/29_big_int64.py: every result off by one (values near 2^62, where
# float64's spacing is 1024): wrong_output on input set 0, both values given exactly.
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 1000003 + 12346
