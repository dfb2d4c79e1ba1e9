# Plain ReLU whose constructor raises, naming each one it finds, when the settings and imports
# that relu_leak_settings.py and relu_leak_imports.py change are still as they left them.
import gc
import os
import sys
import warnings

import torch
import torch.nn as nn


def leaks():
    bad = []
    cpus = getattr(torch, "_kb_leak_affinity", None)
    if cpus is not None and os.sched_getaffinity(0) != cpus:
        bad.append("CPU affinity %s" % sorted(os.sched_getaffinity(0)))
    if sys.getswitchinterval() < 1e-4:
        bad.append("switch interval %g" % sys.getswitchinterval())
    if gc.get_threshold() == (1, 1, 1):
        bad.append("collector thresholds (1, 1, 1)")
    if sys.getrecursionlimit() == 200:
        bad.append("recursion limit 200")
    if warnings.filters and warnings.filters[0][0] == "error" and warnings.filters[0][2] is \
            Warning:
        bad.append("warnings are errors")
    if not torch.backends.mkldnn.enabled:
        bad.append("oneDNN off")
    if (torch.tensor([1e-39]) * torch.tensor([1.0])).item() == 0.0:
        bad.append("denormals flushed")
    mask = os.umask(0o22)
    os.umask(mask)
    if mask == 0o777:
        bad.append("umask 777")
    if "KB_LEAK" in os.environ:
        bad.append("KB_LEAK in the environment")
    if os.readlink("/proc/self/fd/2") == "/dev/null":
        bad.append("stderr at /dev/null")
    signal = sys.modules["signal"]
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
        bad.append("SIGTERM not ignored")
    if type(sys.modules.get("math")).__name__ == "KbProxy":
        bad.append('sys.modules["math"]')
    if sys.modules.get("torch.nn.functional") is not torch.nn.functional:
        bad.append('sys.modules["torch.nn.functional"]')
    numpy = sys.modules.get("numpy")
    if numpy is not None and not hasattr(numpy, "ndarray"):
        bad.append('sys.modules["numpy"]')
    if any(type(f).__name__ == "KbLeakFinder" for f in sys.meta_path):
        bad.append("sys.meta_path")
    import builtins
    if hasattr(builtins, "kb_leak"):
        bad.append("builtins.kb_leak")
    return bad


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        bad = leaks()
        if bad:
            raise RuntimeError("left by an earlier candidate: " + ", ".join(bad))

    def forward(self, x):
        return torch.relu(x)
