# A reference that changes its input in place through x.data, an alias with a version counter of
# its own (the input's counter does not move), and through out= of that alias: refused at
# import like any other in-place edit of an input (the importer notes writes into an input's
# storage), not left for the evaluator to reject every candidate for "modified its inputs".
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        x.data.mul_(2)
        torch.add(x, 1, out=x.data)
        return x + 1


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
