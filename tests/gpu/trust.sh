#!/usr/bin/env bash
# Issue 12 on the GPU machine: the trust layers on the H200. Builds nothing there. From the
# repository root after bundling (../shared/gpu/README.md):
#   ../shared/gpu/bundle.sh .gpu build/bin/kb-* build/bin/libkb-confine.so build/bin/kb_sandbox_torch.py
# then on the device: KB_COMMIT=<sha> bash tests/gpu/trust.sh [catalogue|engine|torch|suite ...]
# (default: catalogue engine torch; torch-tail, witness, witness-c and witness-suite on request). Outputs under $OUT:
#   catalogue.txt   every tests/gpu/catalogue/*.cu through kb-sandbox-cuda at its tier against
#                   the verdict in its header (tests/gpu/catalogue.sh)
#   engine-trust.txt every seed of every tasks/cuda task at smoke, screen and full: false
#                   rejections, the probed bandwidth, the fresh samples' cost per tier
#                   (tests/gpu/engine_trust.sh)
#   torch.txt       the confined PyTorch worker on the GPU: tests/tasks/kernelbench/1_relu
#                   imported, a CUDA ReLU (ok) and a wrong one at smoke and full (torch eager and
#                   torch.compile from the trusted worker), with the worker's confinement; then
#                   ModelNew files: work on an unwaited stream (rejected), the same waited for
#                   (ok), the evaluator changed from inside (rejected), honest ones (ok); the
#                   debug lines give the device's wait after the timed windows
#   torch-tail.txt  the device's wait after the timed windows (and its control) for relu.cu and
#                   the side-stream pair at full, on an idle host and with every CPU busy
#   witness.txt     the witness on the GPU: 12_small_linear's ModelNew files that turn the
#                   worker's checks off first (rejected by the witness) and honest ones (ok)
#   witness-c.txt   the witness of kb-sandbox-cuda: honest catalogue kernels and matmul_f32's
#                   seeds (ok), tests/gpu/witness/timer_forge.cu (rejected)
#   witness-suite.txt the seeds of KB_WITNESS_TASKS (CUDA suite tasks) at the full tier through
#                   kb-eval: the witness's verdicts and rounds
#   suite-*.txt     the built-in CUDA suite campaign with the tuner, every candidate at every
#                   tier (KB_SUITE_ETA=1): rejected evaluations among honest kernels (target 0)
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh
kb_gpu_env
steps=${*:-catalogue engine torch}
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) commit ${KB_COMMIT:-unknown}; $(id -un) (uid $(id -u));" \
    "kernel $(uname -r); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
  kb-runner --list-devices 2>&1 | grep -i -E "confinement|NVIDIA" | head -3
} > "$OUT/machine.txt"
for s in $steps; do
  t0=$(date +%s)
  case $s in
  catalogue) OUT=$OUT bash tests/gpu/catalogue.sh > /dev/null 2>&1; echo "catalogue exit $?" ;;
  engine) OUT=$OUT BUNDLE=$B bash tests/gpu/engine_trust.sh > "$OUT/engine-summary.txt" 2>&1
    echo "engine exit $?" ;;
  torch)
    W=$(mktemp -d)
    {
      python3 tools/kb-import-kernelbench --out "$W/tasks" tests/tasks/kernelbench/1_relu.py 2>&1 | tail -2
      C=tests/gpu/kernelbench_candidates
      KB_LOG=info timeout 240 kb-test-torch-eval --backend cuda --cache "$W/cache" --tiers 13 \
        "$W/tasks/"*relu* "$C/relu.cu" "$C/relu_wrong.cu" 2>&1
      echo "kb-test-torch-eval exit $?"
      # ModelNew files on the GPU: work on a stream of its own not waited for (rejected), the
      # same waited for (ok), and the CPU test's candidates that change the evaluator, return a
      # lazy tensor subclass or reach for its frames and objects (each rejected, named) with
      # honest ones after them (ok)
      M=tests/tasks/modelnew_candidates
      KB_LOG=debug timeout 300 kb-test-torch-eval --backend cuda --cache "$W/cache" --tiers 13 \
        "$W/tasks/"*relu* "$C/relu_side_stream.py" "$C/relu_side_stream_waited.py" \
        "$M/relu_patch_clock.py" "$M/relu_patch_compare.py" "$M/relu_patch_worker.py" \
        "$M/relu_patch_flags.py" "$M/relu_mode_left.py" "$M/relu_patch_restore.py" \
        "$M/relu_profile_hook.py" "$M/relu_lazy_subclass.py" "$M/relu_timer_getframe.py" \
        "$M/relu_timer_inspect.py" "$M/relu_timer_gc.py" "$M/relu_timer_traceback.py" \
        "$M/relu_aten_copy.py" \
        "$M/relu_autotune.py" "$M/relu_expects_defaults.py" "$M/relu_stdlib_frames.py" \
        "$M/relu_torch.py" 2>&1
      echo "kb-test-torch-eval (ModelNew) exit $?"
    } > "$OUT/torch.txt" 2>&1
    echo "torch exit (see torch.txt)" ;;
  witness)
    # the witness (runner/witness.h) on the GPU: ModelNew files that first turn the worker's own
    # checks off (the reference slowed, the timer forged, the comparison forged over zeros:
    # each rejected by the witness), with the honest file and the identity around them (ok)
    W=$(mktemp -d)
    {
      python3 tools/kb-import-kernelbench --out "$W/tasks" tests/tasks/kernelbench/12_small_linear.py 2>&1 | tail -1
      M=tests/tasks/modelnew_candidates
      KB_LOG=debug timeout 240 kb-test-torch-eval --backend cuda --cache "$W/cache" --tiers 3 \
        "$W/tasks/12_small_linear" "$M/linear_torch.py" "$M/linear_unchecked_slow_reference.py" \
        "$M/linear_forge_timer.py" "$M/linear_forge_check.py" \
        "$W/tasks/12_small_linear/seeds/identity.py" "$M/linear_torch.py" 2>&1
      echo "kb-test-torch-eval (witness) exit $?"
    } > "$OUT/witness.txt" 2>&1
    echo "witness exit (see witness.txt)" ;;
  witness-c)
    # the witness of kb-sandbox-cuda (runner/witness.h, runner/sandbox/witness_calls.h): the
    # honest catalogue kernels and the matrix product seeds (ok), and the timer forged through
    # kb-sandbox-cuda's own table entry of cudaEventElapsedTime (rejected by the witness)
    W=$(mktemp -d)
    {
      KB_LOG=debug timeout 200 kb-eval --backend cuda --cache "$W/cache" --tiers full \
        tasks/cuda/rowsum_small tests/gpu/catalogue/honest_*.cu 2>&1
      echo "kb-eval (rowsum_small) exit $?"
      KB_LOG=debug timeout 300 kb-eval --backend cuda --cache "$W/cache" --tiers full \
        tasks/cuda/matmul_f32 tasks/cuda/matmul_f32/seeds/naive.cu \
        tasks/cuda/matmul_f32/seeds/tuned.cu tests/gpu/witness/timer_forge.cu 2>&1
      echo "kb-eval (matmul_f32) exit $?"
    } > "$OUT/witness-c.txt" 2>&1
    echo "witness-c exit (see witness-c.txt)" ;;
  witness-suite)
    # every seed of the CUDA suite tasks KB_WITNESS_TASKS (default: the four whose honest seeds
    # the witness rejected at 9fc9084, when the check between candidates ran inside the
    # witnessed requests) at the full tier through kb-eval: witness verdicts and rounds
    W=$(mktemp -d)
    for t in ${KB_WITNESS_TASKS:-gelu maxpool2d scan matmul_f16}; do
      KB_LOG=debug timeout 120 kb-eval --backend cuda --cache "$W/cache" --tiers full \
        "tasks/cuda/$t" 2>&1 | grep -E "witness|^[a-z_0-9]+ +[a-z_0-9.]+ +full"
      echo "kb-eval ($t) exit ${PIPESTATUS[0]}"
    done > "$OUT/witness-suite.txt" 2>&1
    echo "witness-suite exit (see witness-suite.txt)" ;;
  torch-tail)
    # the device's wait after the timed windows (untimed_work) for the honest C ReLU, the
    # side-stream cheat and its waited-for twin at the full tier, on an idle host and with all
    # CPUs busy (the load of the KernelBench import beside it made relu.cu look like hidden
    # work against a control probed once per worker): the debug lines give window, wait, control
    W=$(mktemp -d)
    {
      python3 tools/kb-import-kernelbench --out "$W/tasks" tests/tasks/kernelbench/1_relu.py 2>&1 | tail -1
      C=tests/gpu/kernelbench_candidates
      for load in idle busy; do
        pids=""
        if [ $load = busy ]; then
          for i in $(seq "$(nproc)"); do (while :; do :; done) & pids="$pids $!"; done
        fi
        echo "== host $load"
        KB_LOG=debug timeout 150 kb-test-torch-eval --backend cuda --cache "$W/cache" --tiers 3 \
          "$W/tasks/"*relu* "$C/relu.cu" "$C/relu_side_stream.py" "$C/relu_side_stream_waited.py" 2>&1 |
          grep -E '^\{|device was busy'
        [ -n "$pids" ] && kill $pids 2>/dev/null
        wait 2>/dev/null
      done
    } > "$OUT/torch-tail.txt" 2>&1
    echo "torch-tail exit (see torch-tail.txt)" ;;
  suite)
    KB_SUITE_ETA=1 KB_SUITE_LIMIT_S=${KB_SUITE_LIMIT_S:-300} OUT=$OUT BUNDLE=$B bash tests/gpu/suite.sh > /dev/null 2>&1
    echo "suite exit $?" ;;
  esac
  echo "  $s: $(( $(date +%s) - t0 )) s"
done > "$OUT/trust-steps.txt" 2>&1
cat "$OUT/machine.txt" "$OUT/trust-steps.txt"
[ -f "$OUT/catalogue.txt" ] && tail -60 "$OUT/catalogue.txt"
[ -f "$OUT/engine-summary.txt" ] && tail -8 "$OUT/engine-summary.txt"
[ -f "$OUT/torch.txt" ] && grep -v " debug: " "$OUT/torch.txt" | tail -25
[ -f "$OUT/torch.txt" ] && grep "device was busy" "$OUT/torch.txt" | tail -24
[ -f "$OUT/torch-tail.txt" ] && cat "$OUT/torch-tail.txt"
[ -f "$OUT/witness.txt" ] && grep -E '^\{|witness:' "$OUT/witness.txt" | cut -c1-400
[ -f "$OUT/witness-c.txt" ] && grep -E 'witness:|  full  |exit' "$OUT/witness-c.txt" | cut -c1-400
exit 0
