# A BatchNorm run in training mode (its running statistics updated) and then in eval mode (the
# running statistics read back) in the same forward(): each call reads statistics the previous
# call moved, so two calls on the same inputs differ. The PyTorch worker refuses to prepare it;
# it was once prepared and every candidate rejected (tests/tasks/test_modelnew.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(64, momentum=0.5)

    def forward(self, x):
        self.bn.train()
        y = self.bn(x)
        self.bn.eval()
        return y + self.bn(x)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
