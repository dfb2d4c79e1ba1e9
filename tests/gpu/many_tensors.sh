#!/usr/bin/env bash
# H200: tasks of 16, 311 (DenseNet201's count) and 1024 inputs (KB_MAX_TENSORS) through
# kb-eval --backend cuda at smoke and full: the verdicts, and the evaluation's wall time against
# the number of inputs (the sandbox's per-tensor work: a guard after each buffer, a fill and a
# checksum per input and set, one descriptor each per call). Each task: y[0..6] = the sum of N
# small f32 inputs (1 to 7 elements), a CUDA oracle of one small kernel per input, also the
# seed. Bundled programs as tests/gpu/lib.sh says; outputs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh
kb_gpu_env
W=$(mktemp -d)
bundle() { # DIR N
  mkdir -p "$1/seeds"
  {
    printf '{"schema": "kernelbrain.task/1", "id": "many%d", "name": "sum of %d tensors",\n' "$2" "$2"
    printf ' "backend": "cuda", "oracle": {"kind": "cuda", "source": "oracle.cu"},\n "inputs": ['
    for ((i = 0; i < $2; i++)); do
      printf '%s{"name": "x%d", "dtype": "f32", "shape": [%d]}' "$([ $i -gt 0 ] && echo ', ')" \
        $i $((1 + i % 7))
    done
    printf '],\n "outputs": [{"name": "y", "dtype": "f32", "shape": [7]}],\n'
    printf ' "tolerance": {"atol": 1e-3, "rtol": 1e-4},\n'
    printf ' "input_sets": [{"seed": 1, "distribution": "uniform", "low": -1, "high": 1},\n'
    printf '                {"seed": 2, "distribution": "normal", "low": 0, "high": 1}],\n'
    printf ' "seeds": [{"name": "naive", "source": "seeds/naive.cu"}]}\n'
  } > "$1/task.json"
  cat > "$1/oracle.cu" <<'CU'
#include <cuda_runtime.h>
#include "kb_kernel.h"
__global__ void zero(float *y, int n) { if ((int)threadIdx.x < n) y[threadIdx.x] = 0; }
__global__ void add(float *y, const float *x, int n) {
  if ((int)threadIdx.x < n) y[threadIdx.x] += x[threadIdx.x];
}
int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (n_out != 1)
    return 1;
  zero<<<1, 32, 0, s>>>((float *)out[0].data, (int)out[0].shape[0]);
  for (int i = 0; i < n_in; i++)
    add<<<1, 32, 0, s>>>((float *)out[0].data, (const float *)in[i].data,
                         (int)kb_tensor_numel(&in[i]));
  return cudaGetLastError() != cudaSuccess;
}
CU
  cp "$1/oracle.cu" "$1/seeds/naive.cu"
}
for n in 16 311 1024; do
  bundle "$W/t$n" $n
  /usr/bin/time -f "%e s" -o "$OUT/many-$n.time" \
    kb-eval --backend cuda --tiers smoke,full --json --cache "$W/cache" "$W/t$n" \
    > "$OUT/many-$n.jsonl" 2> "$OUT/many-$n.err"
  echo "n=$n exit $?" >> "$OUT/many-exit.txt"
done
python3 - "$OUT" > "$OUT/many_tensors.txt" <<'PY'
import json, sys
out = sys.argv[1]
print("inputs  tier   status  wall_s  median_us  samples  cost_ms  (kb-eval --backend cuda --json)")
for n in (16, 311, 1024):
    for line in open("%s/many-%d.jsonl" % (out, n)):
        o = json.loads(line)
        r = o.get("result", {})
        t = r.get("timing", {})
        print("%6d  %-5s  %-6s  %6.3f  %9.2f  %7d  %7d  %s" % (
            n, o["tier"], r.get("status", "-"), o["wall_s"], t.get("median_us", 0),
            t.get("samples", 0), r.get("cost_ms", 0), r.get("reason", o.get("error", ""))))
PY
cat "$OUT/many_tensors.txt" "$OUT/many-exit.txt"
