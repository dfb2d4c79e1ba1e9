# Runs a shell command through an alias of os, which a rule matching only the written name
# would miss: the static rules resolve import aliases. rejected.
import os as kb_os

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        kb_os.system("true")
        return x.clamp_min(0)
