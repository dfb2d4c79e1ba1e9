"""PyTorch reference of the built-in CUDA task "matmul_f16" (KernelBench format: Model, get_inputs,
get_init_inputs), the same operator as its oracle.cu with the task's inputs, dtypes and shapes.
The runner times it in torch eager and torch.compile at the full tier (docs/task-bundle.md,
"torch_reference"); tests/tasks/check_torch_refs.py checks it against the C oracle of the host
task of the same operator, at that task's sizes."""
import torch
import torch.nn.functional as F

M = K = N = 4096


class Model(torch.nn.Module):
    """c = a b, f16 in and out."""

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [(torch.rand(M, K) * 2 - 1).half(), (torch.rand(K, N) * 2 - 1).half()]


def get_init_inputs():
    return []
