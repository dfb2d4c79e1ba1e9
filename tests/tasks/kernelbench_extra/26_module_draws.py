# Tensors drawn once, at module level: a projection forward() uses (torch), a shift (NumPy's
# generator), a scale (Python's random), and a mask that get_inputs() returns as it is. The
# PyTorch worker and the compile tier run a task file and a ModelNew file with the generators
# seeded, so these have the same values in the trusted and the confined worker and in the
# identity seed (the task file again). Before, the identity was wrong_output (PROJ drawn again
# by the identity file) and, without PROJ, rejected by the witness (MASK drawn again by the
# trusted worker). The importer warns that MASK is the same tensor in every input set.
import random

import numpy as np
import torch
import torch.nn as nn

PROJ = torch.randn(64, 32)
SHIFT = torch.from_numpy(np.random.randn(32).astype(np.float32))
SCALE = 0.5 + random.random()
MASK = (torch.rand(16, 32) > 0.5).float()


class Model(nn.Module):
    def forward(self, x, mask):
        return (x @ PROJ + SHIFT) * SCALE * mask


def get_inputs():
    return [torch.randn(16, 64), MASK]


def get_init_inputs():
    return []
