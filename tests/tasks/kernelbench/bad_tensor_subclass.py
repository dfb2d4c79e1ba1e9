# get_inputs() returns a torch.Tensor subclass whose layout raises: an error in the importer's
# own code, not inside a call of the file's. It fails this file alone, in one line, with the
# traceback above it; such an error (a meta tensor made at module level, in the real run) once
# stopped the whole run with a traceback, the files after it not imported.
import torch
import torch.nn as nn


class Weird(torch.Tensor):
    @property
    def layout(self):
        raise RuntimeError("no layout today")


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(4, 4).as_subclass(Weird)]


def get_init_inputs():
    return []
