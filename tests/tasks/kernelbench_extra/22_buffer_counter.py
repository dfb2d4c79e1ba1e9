# A forward() that counts its calls in a registered buffer and scales by the count: every call
# gives other outputs. A buffer may legitimately change (a cache written whole each call), so the
# importer imports it with a warning naming the buffer; the evaluator then rejects even the
# identity as not deterministic (tests/tasks/test_modelnew.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls += 1
        return x * self.calls


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
