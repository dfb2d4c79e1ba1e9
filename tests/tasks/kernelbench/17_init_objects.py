# Constructor arguments that are not JSON: a module class (nn.GELU), a dict holding a tuple, a
# torch.dtype and an infinite float. The PyTorch worker and the seeds call get_init_inputs()
# themselves, so kernelbench.json only records them (the class and inf as {"repr": ...}); they
# were once refused ("only numbers, strings, booleans, None and lists of them are supported").
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d, act, cfg, dtype, limit):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.act = act()
        self.scale = cfg["scale"]
        self.shape = cfg["shape"]
        self.dtype = dtype
        self.limit = limit

    def forward(self, x):
        y = self.act(self.fc(x)) * self.scale
        return torch.clamp(y, max=self.limit).to(self.dtype).reshape(self.shape)


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return [16, nn.GELU, {"scale": 0.5, "shape": (8, 8)}, torch.float32, float("inf")]
