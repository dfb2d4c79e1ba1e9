# Only integer inputs, with different bounds: indices into a table of 1000 words and one of 10
# kinds. The input sets are standard (normal (0, 1): get_inputs() drawn as it is); they were once
# "integers" in [0, 1000), the first input's bounds, and the PyTorch worker drew both inputs in
# them: the kinds' index was out of range in every input set, the task never prepared.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.words = nn.Embedding(1000, 16)
        self.kinds = nn.Embedding(10, 16)

    def forward(self, w, k):
        return self.words(w) + self.kinds(k)


def get_inputs():
    return [torch.randint(0, 1000, (32,)), torch.randint(0, 10, (32,))]


def get_init_inputs():
    return []
