# Wrong outputs that pass every check in its process: it turns off the worker's check of what a
# candidate changed (sys.modules["__main__"].Surface) and replaces the worker's comparison with
# one that finds nothing wrong, then answers zeros. With the witness: rejected, its outputs on
# inputs drawn after the runner asked, read and compared by the trusted worker, are wrong.
import sys

import torch
import torch.nn as nn

WORKER = sys.modules["__main__"]


def compare(got, ref, dtype, atol, rtol, secret=None):
    return 0, got.numel(), -1, 0.0, 0.0, 0.0, 0.0


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.out_features = out_features
        if hasattr(WORKER, "Surface"):  # the worker (the compile tier runs this constructor too)
            WORKER.Surface.changed = lambda *a, **k: None
            WORKER.compare = compare

    def forward(self, x):
        return torch.zeros(x.shape[0], self.out_features, dtype=x.dtype, device=x.device)
