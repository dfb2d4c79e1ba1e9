# A task file written for a GPU: its inputs made on "cuda" in the three ways such files use
# (.cuda(), device="cuda", .to("cuda")). On the host backend the importer and the worker make
# them on the CPU, so the same file runs on either backend (tests/tasks/test_modelnew.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, c):
        return torch.relu(a @ b) + c


def get_inputs():
    a = torch.randn(64, 128).cuda()
    b = torch.randn(128, 32, device="cuda")
    c = torch.randn(64, 32).to("cuda")
    return [a, b, c]


def get_init_inputs():
    return []
