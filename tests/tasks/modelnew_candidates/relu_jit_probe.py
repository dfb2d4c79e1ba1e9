# Plain ReLU whose constructor raises when a copy of a JIT cache in the worker's folder holds
# the file relu_jit_plant.py plants.
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        root = os.path.join(os.getcwd(), "jit")
        for name in os.listdir(root) if os.path.isdir(root) else []:
            if os.path.exists(os.path.join(root, name, "kb_planted.txt")):
                raise RuntimeError("planted file in the JIT copy %s" % name)

    def forward(self, x):
        return torch.relu(x)
