"""PyTorch reference of the built-in CUDA task "gelu" (KernelBench format: Model, get_inputs,
get_init_inputs), the same operator as its oracle.cu with the task's inputs, dtypes and shapes.
The runner times it in torch eager and torch.compile at the full tier (docs/task-bundle.md,
"torch_reference"); tests/tasks/check_torch_refs.py checks it against the C oracle of the host
task of the same operator, at that task's sizes."""
import torch
import torch.nn.functional as F

ROWS, COLS = 16384, 8192


class Model(torch.nn.Module):
    """The exact (erf) GELU."""

    def forward(self, x):
        return F.gelu(x)


def get_inputs():
    return [torch.rand(ROWS, COLS) * 2 - 1]


def get_init_inputs():
    return []
