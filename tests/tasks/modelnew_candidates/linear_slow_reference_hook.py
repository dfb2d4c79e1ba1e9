# Slows down what it is compared with through a global module hook, not a replaced function:
# registers a forward pre-hook for every module (torch.nn.modules.module's global hooks) that
# sleeps 200 us unless the candidate itself is calling, so the task's module, timed beside it in
# this process as torch eager and the same-run baseline, runs slower. rejected (the global
# forward pre-hooks were changed), not ok.
import time

import torch.nn as nn
from torch.nn.modules.module import register_module_forward_pre_hook

MINE = [False]


def slow(module, args):
    if not MINE[0]:
        time.sleep(0.0002)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        register_module_forward_pre_hook(slow)

    def forward(self, x):
        MINE[0] = True
        try:
            return self.linear(x)
        finally:
            MINE[0] = False
