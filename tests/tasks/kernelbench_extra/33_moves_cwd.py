# A task file that changes its process at module level: the working folder (os.chdir) and the
# warning filters (warnings become errors). The importer sets both back after the file: the
# files after it in the same run once failed ("cannot read: No such file or directory" for a
# relative path; a warning of torch's made an error), and this file's own bundle was written
# under the folder it moved to, not --out.
import os
import warnings

import torch
import torch.nn as nn

os.chdir("..")
warnings.simplefilter("error")


class Model(nn.Module):
    def forward(self, x):
        return x + 1


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
