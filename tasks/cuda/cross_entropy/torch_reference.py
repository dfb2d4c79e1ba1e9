"""PyTorch reference of the built-in CUDA task "cross_entropy" (KernelBench format: Model, get_inputs,
get_init_inputs), the same operator as its oracle.cu with the task's inputs, dtypes and shapes.
The runner times it in torch eager and torch.compile at the full tier (docs/task-bundle.md,
"torch_reference"); tests/tasks/check_torch_refs.py checks it against the C oracle of the host
task of the same operator, at that task's sizes."""
import torch
import torch.nn.functional as F

ROWS, CLASSES = 32768, 8192


class Model(torch.nn.Module):
    """Per-row cross entropy, labels taken modulo the class count (floor modulo) as the oracle
    does, reduction "none"."""

    def forward(self, logits, labels):
        t = torch.remainder(labels.long(), logits.shape[1])
        return F.cross_entropy(logits, t, reduction="none")


def get_inputs():
    return [torch.rand(ROWS, CLASSES) * 2 - 1,
            torch.randint(0, CLASSES, (ROWS,), dtype=torch.int32)]


def get_init_inputs():
    return []
