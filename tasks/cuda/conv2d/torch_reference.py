"""PyTorch reference of the built-in CUDA task "conv2d" (KernelBench format: Model, get_inputs,
get_init_inputs), the same operator as its oracle.cu with the task's inputs, dtypes and shapes.
The runner times it in torch eager and torch.compile at the full tier (docs/task-bundle.md,
"torch_reference"); tests/tasks/check_torch_refs.py checks it against the C oracle of the host
task of the same operator, at that task's sizes."""
import torch
import torch.nn.functional as F

N, C, H, W, K, R = 32, 64, 128, 128, 128, 3


class Model(torch.nn.Module):
    """Conv2d, stride 1, zero padding R // 2 (the output keeps H x W), weight and bias as inputs."""

    def forward(self, x, weight, bias):
        return F.conv2d(x, weight, bias, padding=(weight.shape[2] // 2, weight.shape[3] // 2))


def get_inputs():
    return [torch.rand(N, C, H, W) * 2 - 1, torch.rand(K, C, R, R) * 2 - 1,
            torch.rand(K) * 2 - 1]


def get_init_inputs():
    return []
