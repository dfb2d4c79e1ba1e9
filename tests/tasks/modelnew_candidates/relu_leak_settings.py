# An honest ReLU that leaves the process's and the interpreter's settings changed for whatever
# the worker runs next: the main thread pinned to one CPU, thread switches every microsecond,
# the collector after every allocation, a recursion limit of 200, warnings turned into errors,
# oneDNN off, denormals flushed, umask 777, a variable in the environment, stderr pointed at
# /dev/null (the next file's "blocked system call" account lost), SIGTERM no longer ignored.
# Before 2026-12-07 it was ok and every later candidate of that worker ran so (the next file's
# constructor saw all of it). ok, and the settings set back (relu_probe_leaks.py after it is
# ok).
import gc
import os
import sys
import warnings

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 3:
            cpus = os.sched_getaffinity(0)
            torch._kb_leak_affinity = cpus  # for relu_probe_leaks.py
            os.sched_setaffinity(0, {min(cpus)})
            sys.setswitchinterval(1e-6)
            gc.set_threshold(1, 1, 1)
            sys.setrecursionlimit(200)
            warnings.simplefilter("error")
            torch.backends.mkldnn.enabled = False
            torch.set_flush_denormal(True)
            os.umask(0o777)
            os.environ["KB_LEAK"] = "1"
            null = os.open("/dev/null", os.O_WRONLY)
            os.dup2(null, 2)
            os.close(null)
            signal = sys.modules["signal"]  # imported by the worker (the static rules refuse it)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        return torch.relu(x)
