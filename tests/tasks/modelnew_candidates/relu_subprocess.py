# Starts a process at import: refused by the static rules before anything runs. rejected.
import subprocess
import torch.nn as nn

subprocess.run(["true"])


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
