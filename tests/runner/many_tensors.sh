#!/usr/bin/env bash
# A task with hundreds of inputs end to end (issue 14: a KernelBench level-3 module passes every
# parameter as an input): a host bundle written here with N inputs (the sum of N small f32
# tensors, a C oracle) through kb-test-eval (task.json, the runner's evaluator, the sandbox's
# prepare and eval) by its correct seed and a wrong candidate that leaves out the last input;
# then a task.json with KB_MAX_TENSORS + 1 inputs, refused naming the file and the field.
# usage: many_tensors.sh BIN_DIR [N]
set -uo pipefail
bin=$1 n=${2:-300}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# bundle DIR COUNT: writes a task of COUNT inputs x0.. into DIR
bundle() {
  mkdir -p "$1/seeds"
  {
    printf '{"schema": "kernelbrain.task/1", "id": "many", "name": "sum of %d tensors",\n' "$2"
    printf ' "backend": "host", "oracle": {"kind": "c", "source": "oracle.c"},\n "inputs": ['
    for ((i = 0; i < $2; i++)); do
      printf '%s{"name": "x%d", "dtype": "f32", "shape": [%d]}' "$([ $i -gt 0 ] && echo ', ')" \
        $i $((1 + i % 7))
    done
    printf '],\n "outputs": [{"name": "y", "dtype": "f32", "shape": [7]}],\n'
    printf ' "tolerance": {"atol": 1e-3, "rtol": 1e-4},\n'
    printf ' "input_sets": [{"seed": 1, "distribution": "uniform", "low": -1, "high": 1},\n'
    printf '                {"seed": 2, "distribution": "normal", "low": 0, "high": 1}],\n'
    printf ' "seeds": [{"name": "naive", "source": "seeds/naive.c"}]}\n'
  } > "$1/task.json"
  # y[j] = the sum over the inputs of element j (an input of k elements adds to y[0..k-1])
  cat > "$1/oracle.c" <<'C'
#include "kb_kernel.h"
int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)stream;
  if (n_out != 1 || out[0].ndim != 1)
    return 1;
  float *y = out[0].data;
  for (int j = 0; j < out[0].shape[0]; j++)
    y[j] = 0;
  for (int i = 0; i < n_in - SKIP; i++) {
    const float *x = in[i].data;
    for (int64_t j = 0; j < kb_tensor_numel(&in[i]); j++)
      y[j] += x[j];
  }
  return 0;
}
C
  sed -i '1i #define SKIP 0' "$1/oracle.c"
  cp "$1/oracle.c" "$1/seeds/naive.c"
  sed '1s/.*/#define SKIP 1/' "$1/oracle.c" > "$dir/wrong.c"
}

bundle "$dir/many" "$n"
out=$(KB_INCLUDE_DIR=${KB_INCLUDE_DIR:-} "$bin/kb-test-eval" --backend host --tiers 1 \
      --cache "$dir/cache" "$dir/many" "$dir/wrong.c" 2> "$dir/err")
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "kb-test-eval on $n inputs: exit $rc: $(tail -3 "$dir/err")"
echo "$out" | grep -Eq '^many +naive +smoke +ok ' || fail "the correct seed is not ok"
echo "$out" | grep -Eq "^many +wrong.c +smoke +wrong_output .*\"y\"" ||
  fail "the candidate that leaves out input x$((n - 1)) is not wrong_output"

bundle "$dir/toomany" 1025
"$bin/kb-test-eval" --backend host --tiers 1 --cache "$dir/cache" "$dir/toomany" \
  > /dev/null 2> "$dir/err"
rc=$?
grep -q "toomany/task.json:.*\"inputs\" must have at most 1024 items" "$dir/err" && [ $rc -ne 0 ] ||
  fail "1025 inputs: exit $rc, stderr: $(head -c 300 "$dir/err")"

[ $fails -eq 0 ] && echo "many_tensors: all checks passed" || echo "many_tensors: $fails failed"
exit $((fails > 0))
