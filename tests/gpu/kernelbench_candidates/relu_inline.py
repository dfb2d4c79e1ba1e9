# A KernelBench-format solution for level 1 task 19 (ReLU), written for kernelbrain's GPU tests:
# ModelNew with a CUDA kernel built by torch.utils.cpp_extension.load_inline (the compile tier
# builds it; the confined worker loads the built library).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_vec4(const float4 *__restrict__ x, float4 *__restrict__ y, long n4) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  long stride = (long)gridDim.x * blockDim.x;
  for (; i < n4; i += stride) {
    float4 v = x[i];
    v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
    y[i] = v;
  }
}

__global__ void relu_tail(const float *__restrict__ x, float *__restrict__ y, long from, long n) {
  long i = from + blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

torch::Tensor relu_forward(torch::Tensor x) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  long n = xc.numel(), n4 = n / 4;
  auto stream = at::cuda::getCurrentCUDAStream();
  if (n4 > 0)
    relu_vec4<<<132 * 16, 256, 0, stream>>>((const float4 *)xc.data_ptr<float>(),
                                            (float4 *)y.data_ptr<float>(), n4);
  if (n > n4 * 4)
    relu_tail<<<1, 4, 0, stream>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n4 * 4, n);
  return y;
}
"""
cpp_src = "torch::Tensor relu_forward(torch::Tensor x);"

relu_ext = load_inline(name="kb_relu_vec4", cpp_sources=cpp_src, cuda_sources=cuda_src,
                       functions=["relu_forward"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu_ext.relu_forward(x)
