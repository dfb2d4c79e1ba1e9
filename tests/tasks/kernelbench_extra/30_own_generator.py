# forward() draws noise from a torch.Generator the module holds, seeded once in the constructor:
# every call advances it, so two calls on the same inputs differ and no candidate, the identity
# included, can match (the evaluator rejects the identity as not deterministic). The importer's
# warning says so; it once said only that a candidate drawing the same numbers could match.
# (A forward() that seeds its generator itself on every call is deterministic, and its identity
# ok: the warning says "unless forward() seeds it itself".)
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.g = torch.Generator().manual_seed(7)

    def forward(self, x):
        return x + 0.01 * torch.randn(x.shape, generator=self.g)


def get_inputs():
    return [torch.randn(16, 16)]


def get_init_inputs():
    return []
