# An honest ReLU that changes what the next candidates of the worker import and look up:
# sys.modules["math"] and sys.modules["torch.nn.functional"] replaced by proxies (a later
# `from torch.nn.functional import relu` gets the proxy's), sys.modules["numpy"] planted with
# a fake, an import hook put first on sys.meta_path, a name added to the builtins. Before
# 2026-12-07 all of it stayed for the next file. ok, and set back (relu_probe_leaks.py after it
# is ok).
import builtins
import sys
import types

import torch
import torch.nn as nn


class KbProxy(types.ModuleType):
    def __getattr__(self, name):
        return getattr(self.real, name)


def proxy(name):
    p = KbProxy(name)
    p.real = sys.modules[name]
    return p


class KbLeakFinder:
    def find_spec(self, name, path=None, target=None):
        return None


class ModelNew(nn.Module):
    def forward(self, x):
        if not isinstance(sys.modules["math"], KbProxy):
            sys.modules["math"] = proxy("math")
            sys.modules["torch.nn.functional"] = proxy("torch.nn.functional")
            if "numpy" not in sys.modules:
                sys.modules["numpy"] = types.ModuleType("numpy")
            sys.meta_path.insert(0, KbLeakFinder())
            builtins.kb_leak = True
        return torch.relu(x)
