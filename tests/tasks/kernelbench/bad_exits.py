# A task file that ends the process that runs it (sys.exit at import): one line naming it, and
# the other files are still imported.
import sys

import torch.nn as nn

sys.exit(3)


class Model(nn.Module):
    def forward(self, x):
        return x
