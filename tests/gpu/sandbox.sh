#!/usr/bin/env bash
# The CUDA sandbox on the GPU machine (issue 4): builds nothing there. From the repository root,
# after bundling (../shared/gpu/bundle.sh $BUNDLE build/bin/kb-*), on the device:
#   BUNDLE=.gpu bash tests/gpu/sandbox.sh      (outputs under $OUT)
#  1. kb-test-eval --backend cuda: the seeds of CUDA tasks at smoke, screen and full
#     (same-run baseline at full), a kernel with an illegal address (crash, sandbox restarted,
#     restart time) and one that never ends (timeout at the smoke limit, group killed);
#     the runner's overhead per evaluation at smoke, with cached builds.
#  2. A CUDA campaign end to end: redis, kb-scheduler and kb-runner --backend cuda through
#     kb-launch --local, on rowsum_small and gelu, seeds and the tune generator.
# Writes $OUT/sandbox-eval.txt, $OUT/sandbox-campaign.txt; prints a short table last.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh
kb_gpu_env
CACHE=$(mktemp -d)
RT=tests/runner/candidates/cuda_runtime
EV=$OUT/sandbox-eval.txt
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) commit ${KB_COMMIT:-unknown}; $(nproc) CPUs;" \
    "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
  echo "## rowsum_small: seeds at smoke, screen, full; an extra honest kernel; illegal address"
  KB_LOG=debug timeout 300 kb-test-eval --backend cuda --cache "$CACHE" --tiers 123 \
    tasks/cuda/rowsum_small "$RT/rowsum_thread.cu" "$RT/illegal_address.cu" 2>&1
  echo "## vadd_small: a kernel of a few microseconds (timed in batches behind a spin kernel)"
  KB_LOG=debug timeout 120 kb-test-eval --backend cuda --cache "$CACHE" --tiers 123 \
    tests/runner/tasks/vadd_small 2>&1
  echo "## overhead at smoke, builds cached (5 rounds)"
  timeout 120 kb-test-eval --backend cuda --cache "$CACHE" --tiers 1 --repeat 5 \
    tasks/cuda/rowsum_small 2>&1
  echo "## gelu and softmax: smoke and full"
  timeout 300 kb-test-eval --backend cuda --cache "$CACHE" --tiers 13 tasks/cuda/gelu 2>&1
  timeout 300 kb-test-eval --backend cuda --cache "$CACHE" --tiers 13 tasks/cuda/softmax 2>&1
  echo "## a kernel that never ends (smoke limit 10 s)"
  timeout 120 kb-test-eval --backend cuda --cache "$CACHE" --tiers 1 tasks/cuda/rowsum_small \
    "$RT/hang.cu" 2>&1
} > "$EV" 2>&1

# 2. the campaign, in a scratch copy with absolute task paths and a small budget
CA=$OUT/sandbox-campaign.txt
dir=$(mktemp -d)
python3 - "$PWD" "$dir" > "$dir/campaign.json" <<'PY'
import json, sys
root, d = sys.argv[1], sys.argv[2]
c = json.load(open(root + "/examples/suite/campaign.json"))
c["id"] = "sandbox"
c["name"] = "CUDA sandbox end to end"
c["tasks"] = [root + "/tasks/cuda/rowsum_small", root + "/tasks/cuda/gelu"]
c["budget"] = {"gpu_seconds": 60}
c["results_dir"] = d + "/results"
c["generators"] = {"seed": True, "max_per_task": 4, "tune": {"weight": 1}}
print(json.dumps(c, indent=1))
PY
t0=$(date +%s.%N)
timeout 200 kb-launch --local "$dir/campaign.json" > "$CA" 2>&1
echo "exit $?" >> "$CA"
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "wall_s %.1f\n", b - a }' >> "$CA"
for f in "$dir"/results/sandbox/redis/runner-*.log; do
  [ -f "$f" ] || continue
  echo "## $(basename "$f") (sandbox starts, statuses)" >> "$CA"
  grep -E "sandbox [0-9]+ started|serving campaign" "$f" >> "$CA"
  grep -oE "tier [0-9] \([a-z]+\): [a-z_]+" "$f" | sort | uniq -c >> "$CA"
done

echo "== sandbox summary"
grep -E "^# |^(rowsum_small|gelu|softmax|vadd_small) " "$EV" | cut -c1-230
grep -E "^campaign|^exit|^wall_s|started \(cuda" "$CA" | head -8
