// expect: rejected thread
// Hands the work to a host thread and returns at once.
#include <cuda_runtime.h>
#include <thread>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  const void *src = in[0].data;
  void *dst = out[0].data;
  size_t bytes = kb_tensor_numel(&in[0]) * sizeof(float);
  std::thread([=] { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                    (cudaStream_t)stream); }).detach();
  return 0;
}
