# A torch.jit.script function and a custom autograd.Function at module level: scripting reads the
# function's source while the file executes, which the importer once could not give it ("Can't
# get source"); the identity is ok at smoke and full.
import torch
import torch.nn as nn


@torch.jit.script
def swish(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * x

    @staticmethod
    def backward(ctx, g):
        return g


class Model(nn.Module):
    def forward(self, x):
        return Square.apply(swish(x))


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
