# A task file importing a helper that lies next to it (kb_sibling_pkg/): refused, the helper
# named as the user's own (the message once said "needs the Python module kb_sibling_pkg, not
# installed here", as for a module to install). The PyTorch worker runs the task file alone.
import torch
import torch.nn as nn
from kb_sibling_pkg import act


class Model(nn.Module):
    def forward(self, x):
        return act(x)


def get_inputs():
    return [torch.randn(8, 8)]


def get_init_inputs():
    return []
