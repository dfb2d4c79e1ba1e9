# f16 matrix product, inputs made on "cuda" as some task files do (the importer keeps them on
# the meta device).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a @ b


def get_inputs():
    a = torch.randn(2048, 1024, dtype=torch.float16, device="cuda")
    b = torch.randn(1024, 512, dtype=torch.float16).cuda()
    return [a, b]


def get_init_inputs():
    return []
