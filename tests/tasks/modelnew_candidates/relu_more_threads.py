# An honest ReLU that asks torch for more intra-op threads than the worker has (four): torch
# starts them at its next parallel operation and keeps them in its pool after the worker sets the
# thread count back. Threads no Python frame shows, left in the worker after the evaluation: the
# worker lists them ("threads_left") and the runner replaces it; the verdict stays the
# candidate's (ok), since torch itself started them.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if torch.get_num_threads() < 4:
            torch.set_num_threads(4)
        return torch.relu(x)
