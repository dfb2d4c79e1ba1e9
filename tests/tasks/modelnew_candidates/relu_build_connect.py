# Opens a TCP connection from its module level, which runs in the compile tier (a load_inline
# file), the module's name built from pieces past the static rules. The builder's Landlock rules
# allow no TCP connect: compile_error, "PermissionError" (without them: a refused connection).
import importlib

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

importlib.import_module("sock" + "et").create_connection(("127.0.0.1", 9), timeout=2)
ext = load_inline(name="kb_test_connect", cpp_sources="", functions=[])


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
