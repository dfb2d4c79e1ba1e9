# A load_inline file whose module level (run by the compile tier, outside the confined worker)
# starts a process past the static rules (importlib, not `import subprocess`) in a session of
# its own. Before 2026-12-07 it outlived the build (the runner kills the builder's process
# group only): it could burn the host's CPUs while other candidates and the trusted worker are
# timed. The builder adopts orphans and kills what is left: compile_error (the extension does
# not build here), and no `sleep 987` left running.
import importlib

import torch.nn as nn
from torch.utils.cpp_extension import load_inline

sp = importlib.import_module("subprocess")
sp.Popen(["sleep", "987"], start_new_session=True)
ext = load_inline(name="kb_test_daemon", cpp_sources="", functions=[])


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
