# Broken for the importer: like 11_scale_by_max.py, but with 1 GiB of input, over the default
# --cpu-limit of 512 MiB for a real CPU run.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x / float(x.abs().max())


def get_inputs():
    return [torch.randn(16384, 16384)]


def get_init_inputs():
    return []
