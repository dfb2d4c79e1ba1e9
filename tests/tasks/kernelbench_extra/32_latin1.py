# -*- coding: latin-1 -*-
# A task file saved in Latin-1, as its first line declares (Python reads it so): imported,
# reference.py and the seeds written in UTF-8 with the declaration changed to utf-8; NAME has
# 4 characters, so out = 4 tanh(x). It was once refused ("'utf-8' codec can't decode byte
# 0xe9"). Café, résumé.
import torch
import torch.nn as nn

NAME = "café"


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * len(NAME)


def get_inputs():
    return [torch.randn(8, 8)]


def get_init_inputs():
    return []
