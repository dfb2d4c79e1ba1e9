# Asks `nvcc --version` from forward(), as torch's repro writer does after a failed compile,
# its module named in pieces past the static rules: the confined worker answers that exact
# command from the recording it made before confinement (runner/sandbox/kb_sandbox_torch.py,
# PROBES), so no process starts and the evaluation goes on. ok, where relu_spawn_hidden.py
# (any other command) is rejected. The answer is the recording's: the output, or
# FileNotFoundError where the machine has no nvcc.
import importlib

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        sp = importlib.import_module("sub" + "process")
        try:
            out = sp.check_output(["nvcc", "--version"])
            if b"nvcc" not in out.lower() and b"cuda" not in out.lower():
                return x  # a wrong answer: wrong_output
        except FileNotFoundError:
            pass
        return x.clamp_min(0)
