import torch


class Modle(torch.nn.Module):  # misspelt: no class Model
    def forward(self, x):
        return x
