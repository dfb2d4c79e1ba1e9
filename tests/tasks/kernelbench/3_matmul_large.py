# Matrix product of two 8192 x 8192 f32 matrices (256 MiB each: the importer must not allocate).
import torch
import torch.nn as nn

M = 8192
K = 8192
N = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
