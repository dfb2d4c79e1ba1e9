# Asks the standard library's platform module what machine it runs on from forward(), as
# Triton's build does (platform.architecture() runs `file -b <python>`; platform.processor()
# runs `uname -p`): the confined worker answers both from the recording it made before
# confinement (runner/sandbox/kb_sandbox_torch.py, PROBES), so no process starts and the
# evaluation goes on: ok (before, rejected for clone(2), measured on the H200 under torch
# 2.11 with Triton's build).
import platform

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        bits, _ = platform.architecture()
        platform.processor()
        if not bits.endswith("bit"):
            return x  # a wrong answer: wrong_output
        return x.clamp_min(0)
