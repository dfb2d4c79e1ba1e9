#!/usr/bin/env bash
# The GPU machine's suite: builds nothing there. Run it through the device tool from the
# repository root after bundling (see ../shared/gpu/README.md):
#   echo /.gpu/ >> .git/info/exclude; ../shared/gpu/bundle.sh .gpu build/bin/kb-*
#   then on the device: bash tests/gpu/run.sh  (writes its outputs under $OUT)
# What it runs so far:
#   - kb-runner --list-devices: the CUDA build sees the GPU (runtime, driver, CUPTI versions)
#   - kb-bench-queue with 16 and 256 runners on this host's cores
#   - the demo campaign (host backend) with kb-launch --local, 1 and 4 runners
#   - tests/gpu/sandbox.sh: CUDA tasks through the sandbox, and a CUDA campaign end to end
# Run separately (they take minutes): tests/gpu/suite.sh (the built-in CUDA suite with the tuner,
# GPU busy fraction, the sandbox's phases per tier, KB_SUITE_AB=1 for before/after; table by
# tests/gpu/suite_table.py), tests/gpu/timing_probe.sh (also part of tests/gpu/devkern.sh) and,
# on the two-GPU machine,
# tests/gpu/two_gpus.sh (kb-launch --local --gpus 0 against --gpus 0,1).
# Prints a short table last.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(mktemp -d)}
export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$PWD/.gpu/bin:$PATH
export KB_INCLUDE_DIR=$PWD/common/include
export KB_CACHE=$(mktemp -d)
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
} > "$OUT/machine.txt"
kb-runner --list-devices --json > "$OUT/devices.json" 2>&1
kb-runner --list-devices > "$OUT/devices.txt" 2>&1

for n in 16 256; do
  kb-bench-queue --runners $n --seconds 10 > "$OUT/queue-$n.txt" 2>&1
done

# The demo over the built-in host tasks, in a scratch copy of the campaign with absolute paths.
demo() {
  local runners=$1 dir
  dir=$(mktemp -d)
  sed -e "s#\"../../tasks/#\"$PWD/tasks/#g" -e "s#\"results_dir\": \"../../results\"#\"results_dir\": \"$dir/results\"#" \
    examples/demo/campaign.json > "$dir/campaign.json"
  local t0 t1
  t0=$(date +%s.%N)
  kb-launch --local --runners "$runners" "$dir/campaign.json" > "$OUT/demo-$runners.txt" 2>&1
  echo "exit $?" >> "$OUT/demo-$runners.txt"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "wall_s %.1f\n", b - a }' >> "$OUT/demo-$runners.txt"
}
demo 1
demo 4

# issue 4, device side (needs build/bin/test_devkern, test_cupti, kb-sandbox-cuda in the bundle):
# trusted kernels, CUPTI, the catalogue, the independent timer; all in $OUT/devkern-suite.txt
BUNDLE=.gpu bash tests/gpu/devkern.sh | tail -45
# issue 4, the sandbox: CUDA tasks through kb-sandbox-cuda (verdicts, timings, restarts, overhead)
# and a CUDA campaign end to end with kb-runner --backend cuda; $OUT/sandbox-*.txt
BUNDLE=.gpu bash tests/gpu/sandbox.sh | tail -40
echo "== summary"
printf '%-28s %s\n' "devices" "$(tr -d '\n' < "$OUT/devices.txt" | cut -c1-120)"
for n in 16 256; do printf '%-28s %s\n' "queue, $n runners" "$(tail -1 "$OUT/queue-$n.txt")"; done
for n in 1 4; do
  printf '%-28s %s, %s\n' "demo, $n runner(s)" "$(grep -m1 '^campaign' "$OUT/demo-$n.txt")" \
    "$(grep wall_s "$OUT/demo-$n.txt")"
done
