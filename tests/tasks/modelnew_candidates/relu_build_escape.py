# Its module level runs in the compile tier (a load_inline file is run there to build its
# extension), outside the confined worker. It writes beside its build folder, into the cache
# that holds every other candidate's build (a poisoned neighbour), then opens a TCP connection.
# The builder confines the file's code to its own folders (Landlock): compile_error, the write
# refused ("PermissionError"), nothing written.
import os

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(os.path.dirname(here), "kb_escaped.txt"), "w") as f:
    f.write("written outside the build folder by a candidate\n")
ext = load_inline(name="kb_test_escape", cpp_sources="", functions=[])


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
