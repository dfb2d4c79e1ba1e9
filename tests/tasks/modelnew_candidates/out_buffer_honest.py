# kernelbench_extra/39_out_buffer.py's operator computed plainly (a new tensor each call): ok at
# the full tier. It was rejected by the witness on the host, the reference's reused buffer read
# as the last call's outputs for every call.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 2
