# A ModelNew that leaves its work to the garbage collector: forward returns an empty tensor and
# drops an object in a reference cycle whose __del__ computes the ReLU into it. With the
# collector's first threshold at 1, the next collection comes at the evaluator's next few
# allocations after forward returned; the finalizer waits (arming a new cycle for each
# collection) until 40 us have passed since forward returned, so that the timed window has
# closed, and then fills the output before the evaluator copies it (Run.settle). It puts the
# collector's thresholds back itself, and sets no gc callback, profile or trace function.
# Before 2026-12-07 ok at smoke with the work left out of its time; expected now: wrong_output
# (the collector is off from forward's return until its outputs are copied).
import gc
import time

import torch
import torch.nn as nn

WAIT_S = 40e-6


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


class Later:
    def __del__(self):
        if time.perf_counter() - self.t0 < WAIT_S:
            arm(self.x, self.out, self.was, self.t0)  # the next collection
            return
        torch.clamp(self.x, min=0.0, out=self.out)
        gc.set_threshold(*self.was)


def arm(x, out, was, t0):
    job = Later()
    job.me, job.x, job.out, job.was, job.t0 = job, x, out, was, t0


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        was = gc.get_threshold()
        gc.collect(0)
        gc.set_threshold(1, 10, 10)
        arm(x, out, was, time.perf_counter())
        return out
