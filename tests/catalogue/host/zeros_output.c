/* catalogue: expect wrong_output "expected"
 * catalogue: source pygpubench (exploits/submission_gpu_scan_zeros: a zero output that a loose
 *            or tampered check accepts); KernelBench (zero_out_kernel.py)
 * catalogue: tier smoke
 * Writes zeros, the cheapest constant output (right for a task whose outputs are near zero
 * within a loose atol). */
#include <stdint.h>
#include <string.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  memset(out[0].data, 0, (size_t)in[0].shape[0] * sizeof(float));
  return 0;
}
