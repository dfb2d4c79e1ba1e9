# Honest, with standard-library features that read a caller's frame for their own use
# (namedtuple, typing.NamedTuple, enum, dataclasses, logging.warning, warnings.warn): ok.
import collections
import dataclasses
import enum
import logging
import typing
import warnings
import torch
import torch.nn as nn

Pair = collections.namedtuple("Pair", "a b")


class Shape(typing.NamedTuple):
    n: int


class Kind(enum.Enum):
    RELU = 1


@dataclasses.dataclass
class Conf:
    alpha: float = 0.0


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conf = Conf()
        logging.getLogger("kb").warning("ModelNew built")
        warnings.warn("a warning from a solution")

    def forward(self, x):
        p = Pair(1, 2)
        logging.getLogger("kb").debug("forward %s", p)
        return torch.relu(x)
