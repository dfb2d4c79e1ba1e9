/* Oracle of the "flaky_oracle" test task (tests/e2e/infra_retry.sh): the sum of a f32 vector,
 * accumulated in double, that fails its first call in each sandbox process (returns 1), as an
 * oracle meeting a transient fault would (a device allocation failing while another process
 * holds the memory). The mark lives in the process environment, which outlives a reload of
 * this library. The failure is the runner's, not a candidate's: infra_error, and the item is
 * run again. */
#include <stdint.h>
#include <stdlib.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (getenv("KB_FLAKY_ORACLE_RAN") == NULL) {
    setenv("KB_FLAKY_ORACLE_RAN", "1", 1);
    return 1;
  }
  if (n_in != 1 || n_out != 1 || in[0].dtype != KB_F32 || out[0].dtype != KB_F32)
    return 1;
  const float *x = in[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  double acc = 0.0;
  for (int64_t i = 0; i < n; i++)
    acc += x[i];
  *(float *)out[0].data = (float)acc;
  return 0;
}
