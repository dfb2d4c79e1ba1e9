# A get_inputs() that draws from a generator nobody seeds (np.random.default_rng() without a
# seed: the operating system's entropy): two draws under the same seed differ. The PyTorch
# worker refuses to prepare it, naming the input. It was once prepared, and every candidate, the
# identity included, was rejected for "modified its inputs" (an unseen set drawn twice
# differed) (tests/tasks/test_modelnew.py).
import numpy as np
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    rng = np.random.default_rng()
    return [torch.from_numpy(rng.standard_normal((16, 64)).astype(np.float32))]


def get_init_inputs():
    return []
