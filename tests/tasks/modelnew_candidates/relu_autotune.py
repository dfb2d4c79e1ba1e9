# Turns on cuDNN's autotuner for itself (a setting of the whole process that changes only how
# fast convolutions run, as many KernelBench solutions do): ok; the worker sets it back after
# the evaluation, so the next candidate starts as every one does (the next relu_torch is ok in
# the same worker process).
import torch
import torch.nn as nn

torch.backends.cudnn.benchmark = True


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
