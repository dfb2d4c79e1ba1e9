# A task file that changes torch's process-wide default dtype at module level: refused, the
# setting named, and set back, so the files imported after it keep f32 (they once all became
# f64 tasks in the same run, their task.json wrong for the PyTorch worker).
import torch
import torch.nn as nn

torch.set_default_dtype(torch.float64)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
