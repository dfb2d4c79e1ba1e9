# Slows down what it is compared with, as linear_slow_reference.py does, after turning off the
# worker's own check of what a candidate changed: the worker's classes are reachable from any
# code in its process (sys.modules["__main__"]), so its Surface check is replaced by one that
# finds nothing. Measured on the CPU before the witness: ok at full, 12.7x its same-run
# baseline (eager 317.7 us). With the witness: rejected, torch eager in its process several
# times the trusted worker's on the runner's witness calls.
import sys
import time

import torch.nn as nn
import torch.nn.functional as F

REAL_LINEAR = F.linear
MINE = [False]


def slow_linear(x, w, b=None):
    if not MINE[0]:
        time.sleep(0.0002)
    return REAL_LINEAR(x, w, b)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        worker = sys.modules["__main__"]
        if hasattr(worker, "Surface"):  # the worker (the compile tier runs this constructor too)
            worker.Surface.changed = lambda *a, **k: None
            F.linear = slow_linear

    def forward(self, x):
        MINE[0] = True
        try:
            return self.linear(x)
        finally:
            MINE[0] = False
