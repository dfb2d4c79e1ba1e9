"""PyTorch reference of the built-in CUDA task "maxpool2d" (KernelBench format: Model, get_inputs,
get_init_inputs), the same operator as its oracle.cu with the task's inputs, dtypes and shapes.
The runner times it in torch eager and torch.compile at the full tier (docs/task-bundle.md,
"torch_reference"); tests/tasks/check_torch_refs.py checks it against the C oracle of the host
task of the same operator, at that task's sizes."""
import torch
import torch.nn.functional as F

N, C, H, W = 64, 128, 128, 128


class Model(torch.nn.Module):
    """MaxPool2d(kernel_size=3, stride=2, padding=1)."""

    def forward(self, x):
        return F.max_pool2d(x, kernel_size=3, stride=2, padding=1)


def get_inputs():
    return [torch.rand(N, C, H, W) * 2 - 1]


def get_init_inputs():
    return []
