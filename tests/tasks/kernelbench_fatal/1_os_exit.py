# A task file that ends the process running it without Python's sys.exit (os._exit at its top
# level, exit status 0): once the importer stopped here, silently, with exit status 0, the files
# after it never imported and no summary printed.
import os

import torch
import torch.nn as nn

os._exit(0)


class Model(nn.Module):
    def forward(self, x):
        return x
