"""PyTorch reference of the built-in CUDA task "bmm" (KernelBench format: Model, get_inputs,
get_init_inputs), the same operator as its oracle.cu with the task's inputs, dtypes and shapes.
The runner times it in torch eager and torch.compile at the full tier (docs/task-bundle.md,
"torch_reference"); tests/tasks/check_torch_refs.py checks it against the C oracle of the host
task of the same operator, at that task's sizes."""
import torch
import torch.nn.functional as F

Z, M, K, N = 32, 1024, 1024, 1024


class Model(torch.nn.Module):
    """c[z] = a[z] b[z]."""

    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.rand(Z, M, K) * 2 - 1, torch.rand(Z, K, N) * 2 - 1]


def get_init_inputs():
    return []
