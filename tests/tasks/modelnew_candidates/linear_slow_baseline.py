# Slows down the same-run baseline it is compared with (the task's identity seed, a ModelNew of
# its own file, loaded in the same worker): on its first call it finds the baseline's module
# class through torch.nn.Module.__subclasses__() (a class of another candidate file,
# kb_candidate_<n>) and wraps its forward in one that waits 200 us first. On relu this was ok at
# the full tier before 2026-12-07, its same-run speedup 6.56 against 1.24 for plain torch.relu.
# Now rejected ("the same-run baseline's module's class Model.forward was replaced"): the
# baseline is loaded and recorded before the candidate's code runs (Surface.keep_baseline).
import time

import torch
import torch.nn as nn


def slowed(forward):
    def wait_first(self, *args):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 200e-6:
            pass
        return forward(self, *args)
    return wait_first


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.others_slowed = False

    def forward(self, x):
        if not self.others_slowed:
            self.others_slowed = True
            for cls in nn.Module.__subclasses__():
                if cls.__module__.startswith("kb_candidate_") and cls is not ModelNew:
                    cls.forward = slowed(cls.forward)
        return torch.addmm(self.linear.bias, x, self.linear.weight.t())
