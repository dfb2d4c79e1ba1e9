# A slow kernel that reports itself fast: it turns off the worker's check of what a candidate
# changed (sys.modules["__main__"].Surface), then replaces the worker's timer so that every
# sample says 0.5 us, while each call sleeps 1 ms. Every timing check in its process reads that
# timer. With the witness: rejected, the runner's clock over calls on fresh inputs says about
# 1 ms a call.
import sys
import time

import torch.nn as nn

WORKER = sys.modules["__main__"]
REAL_STOP = getattr(getattr(WORKER, "Timer", None), "stop", None)


def stop(self, batch):
    REAL_STOP(self, batch)
    return 0.5


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        if REAL_STOP is not None:  # the worker (the compile tier runs this constructor too)
            WORKER.Surface.changed = lambda *a, **k: None
            WORKER.Timer.stop = stop

    def forward(self, x):
        time.sleep(0.001)
        return self.linear(x)
