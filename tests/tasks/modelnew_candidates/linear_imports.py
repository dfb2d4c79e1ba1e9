# Honest: imports standard modules not loaded yet (their code comes from importlib, under their
# own file names) and uses dataclasses and namedtuple, which make code of their own. ok.
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        import fractions  # noqa: F401
        import statistics  # noqa: F401
        import dataclasses
        import collections

        @dataclasses.dataclass
        class P:
            a: int = 1
        self.p = P()
        self.nt = collections.namedtuple("NT", "x y")(1, 2)
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.linear(x)
