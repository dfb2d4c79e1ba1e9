# Starts a process from forward(), its module named in pieces so the static rules cannot see
# it: the confined worker's audit hook ends the evaluation with the process it tried to
# start named (seccomp alone would end it by SIGSYS with no line: subprocess blocks signals
# around its fork). rejected.
import importlib

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        importlib.import_module("sub" + "process").run(["tr" + "ue"])
        return x.clamp_min(0)
