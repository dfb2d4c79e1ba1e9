#!/usr/bin/env bash
# The hypotheses about the one sandbox/independent-timer disagreement left (honest_twopass) in one
# GPU run: tests/gpu/timing_probe.py's variants of the sandbox's full tier and of
# bench/gpu/indep_timer.cu (see the script's top). Builds the independent timer for the
# candidates with nvcc there, nothing of kernelbrain. From the repository root, after bundling
# kb-sandbox-cuda into $BUNDLE (default .gpu); tests/gpu/devkern.sh calls it too:
#   BUNDLE=.gpu bash tests/gpu/timing_probe.sh [NAME...]   (default honest_twopass honest_vec4)
# Writes $OUT/timing-probe.txt (the table) and $OUT/timing-probe.jsonl (every reply, with the
# samples and calls). Exit 0 when it ran (it judges nothing), 1 when something did not build.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh
kb_gpu_env /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64
export PATH=$PATH:/usr/local/cuda/bin
ARCH=${ARCH:-sm_90}
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(honest_twopass honest_vec4)
build=$(mktemp -d)
for c in "${names[@]}"; do
  nvcc -O3 -arch=$ARCH -cudart shared -Icommon/include bench/gpu/indep_timer.cu \
    tests/gpu/catalogue/$c.cu -o "$build/indep_$c" > "$build/$c.log" 2>&1 &
done
wait
for c in "${names[@]}"; do
  [ -x "$build/indep_$c" ] || { echo "indep_$c: build failed: $(head -3 "$build/$c.log")"; exit 1; }
done
python3 tests/gpu/timing_probe.py --sandbox "$(command -v kb-sandbox-cuda)" --indep "$build" \
  --arch "$ARCH" --out "$OUT" --only "${names[@]}" 2>&1 | tee "$OUT/timing-probe.txt"
exit "${PIPESTATUS[0]}"
