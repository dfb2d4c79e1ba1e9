"""PyTorch reference of the built-in CUDA task "layernorm" (KernelBench format: Model, get_inputs,
get_init_inputs), the same operator as its oracle.cu with the task's inputs, dtypes and shapes.
The runner times it in torch eager and torch.compile at the full tier (docs/task-bundle.md,
"torch_reference"); tests/tasks/check_torch_refs.py checks it against the C oracle of the host
task of the same operator, at that task's sizes."""
import torch
import torch.nn.functional as F

ROWS, COLS = 32768, 8192


class Model(torch.nn.Module):
    """LayerNorm over each row (biased variance, eps 1e-5), weight and bias as inputs."""

    def forward(self, x, weight, bias):
        return F.layer_norm(x, (x.shape[-1],), weight, bias, eps=1e-5)


def get_inputs():
    return [torch.rand(ROWS, COLS) * 2 - 1, torch.rand(COLS) * 2 - 1, torch.rand(COLS) * 2 - 1]


def get_init_inputs():
    return []
