# A task file saved with a byte order mark and CRLF line endings (an editor on Windows):
# Python reads it, so the importer does (the BOM is dropped from reference.py and the seeds).
# The constructor and forward() print and warn: stdout of the importer stays its report.
import warnings

import torch
import torch.nn as nn

print("loading the task file")


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        print("building Model")
        warnings.warn("Model is deprecated")

    def forward(self, x):
        print("forward", tuple(x.shape))
        return x.abs()


def get_inputs():
    print("drawing the inputs")
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []


if __name__ == "__main__":
    print(Model()(*get_inputs()).shape)
