/* catalogue: expect wrong_output "nan"
 * catalogue: source AI CUDA Engineer (the retracted 150x kernel passed on memory that still held
 *            the reference's result); KernelBench (result_reuse_kernel.py)
 * catalogue: tier smoke
 * Writes nothing at all, relying on a stale output buffer; the evaluator poisons every output
 * before every call. */
#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)stream;
  return 0;
}
