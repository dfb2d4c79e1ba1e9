# A load_inline extension whose C++ does not compile: compile_error, with the log.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
torch::Tensor relu_fwd(torch::Tensor x) {
  return x.clamp_min(0) this is not C++;
}
"""
ext = load_inline(name="kb_test_relu_bad", cpp_sources=source, functions=["relu_fwd"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_fwd(x)
