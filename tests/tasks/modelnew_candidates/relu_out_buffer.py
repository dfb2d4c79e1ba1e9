# A ReLU that allocates its output once and writes into it on every call (a legitimate
# optimization): ok at the full tier. On the host the witness's calls kept views of the buffer,
# not copies, and it was rejected ("wrong on inputs drawn after the runner asked, read outside
# its process: output "out" of witness call 1 of 256").
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = None

    def forward(self, x):
        if self.out is None or self.out.shape != x.shape:
            self.out = torch.empty_like(x)
        return torch.clamp(x, min=0, out=self.out)
