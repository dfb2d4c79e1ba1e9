"""PyTorch reference of the built-in CUDA task "attention" (KernelBench format: Model, get_inputs,
get_init_inputs), the same operator as its oracle.cu with the task's inputs, dtypes and shapes.
The runner times it in torch eager and torch.compile at the full tier (docs/task-bundle.md,
"torch_reference"); tests/tasks/check_torch_refs.py checks it against the C oracle of the host
task of the same operator, at that task's sizes."""
import torch
import torch.nn.functional as F

B, H, S, D = 16, 16, 1024, 64


class Model(torch.nn.Module):
    """softmax(q k^T / sqrt(D)) v per batch and head: no mask, no dropout."""

    def forward(self, q, k, v):
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v)
        s = torch.matmul(q, k.transpose(-2, -1)) / (q.shape[-1] ** 0.5)
        return torch.matmul(torch.softmax(s, dim=-1), v)


def get_inputs():
    return [torch.rand(B, H, S, D) * 2 - 1 for _ in range(3)]


def get_init_inputs():
    return []
