# i64 outputs beyond 2^53 (a multiplicative hash of values near 2^42): the PyTorch worker's
# comparison went through float64, where a result off by one rounds to the same value, so a
# candidate adding 1 passed input set 0 (caught, when at all, as "rejected" on unseen inputs
# where the rounding happened to differ). Now two different i64 values never compare equal,
# as in kb__verify, and the message gives both exactly.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 1000003 + 12345


def get_inputs():
    return [torch.randint(2**40, 2**42, (64,))]


def get_init_inputs():
    return []
