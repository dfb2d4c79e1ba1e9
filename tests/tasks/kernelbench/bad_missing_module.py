# Broken here: imports a module no machine has.
import torch
import kb_made_up_module_for_tests
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return kb_made_up_module_for_tests.f(x)


def get_inputs():
    return [torch.randn(8, 8)]


def get_init_inputs():
    return []
