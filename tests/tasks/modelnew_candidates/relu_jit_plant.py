# An honest ReLU that writes a file into every copy of a build's JIT caches in the worker's
# folder (its own, its same-run baseline's: <--dir>/jit/, the worker's working folder). Before
# 2026-12-07 the copies stayed for the next evaluations of the worker, so what it planted there
# was what inductor or Triton found for those builds later (on a GPU: code of its choosing run
# as the baseline's). ok; relu_jit_probe.py after it finds nothing (the copies made anew).
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        root = os.path.join(os.getcwd(), "jit")
        for name in os.listdir(root) if os.path.isdir(root) else []:
            try:
                with open(os.path.join(root, name, "kb_planted.txt"), "w") as f:
                    f.write("planted by an earlier candidate\n")
            except OSError:
                pass
        return torch.relu(x)
