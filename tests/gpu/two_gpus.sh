#!/usr/bin/env bash
# kb-launch --local on a two-GPU machine (issue 6): the same campaign once on one GPU (--gpus 0)
# and once on two (--gpus 0,1: two runners, one per GPU), each from scratch (fresh results,
# redis and compile cache); prints each run's evaluations, wall time and evaluations per second,
# and the ratio. The campaign: 6 tasks of the built-in suite, seeds and up to KB_TWO_PER_TASK
# (default 8) tune proposals each. Builds nothing there; bundle kb-launch, kb-runner,
# kb-scheduler, kb-submit, kb-sandbox-cuda into $BUNDLE (default .gpu), then on the device:
#   BUNDLE=.gpu bash tests/gpu/two_gpus.sh        (writes $OUT/two-gpus.txt)
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh
kb_gpu_env /usr/local/cuda/extras/CUPTI/lib64
PER_TASK=${KB_TWO_PER_TASK:-8}
LOG=$OUT/two-gpus.txt
kb_gpu_log "$LOG"
run() { # label gpus
  local label=$1 gpus=$2 dir
  dir=$(mktemp -d)
  kb_six_task_campaign "$dir" two "$PER_TASK" > "$dir/campaign.json"
  local t0 t1
  t0=$(date +%s.%N)
  timeout -s INT 150 kb-launch --local --gpus "$gpus" "$dir/campaign.json" > "$dir/out.txt" 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  local evals
  evals=$(grep -oE '[0-9]+ evaluations\)' "$dir/out.txt" | awk '{ s += $1 } END { print s + 0 }')
  grep -E '^(started|campaign|budget)' "$dir/out.txt" >> "$LOG"
  awk -v l="$label" -v a="$t0" -v b="$t1" -v e="$evals" -v rc="$rc" \
    'BEGIN { printf "%-10s exit %d  evaluations %d  wall_s %.1f  evaluations/s %.2f\n", l, rc, e, b - a, e / (b - a) }' \
    | tee -a "$LOG"
}
run one-gpu 0
run two-gpus 0,1
awk '/evaluations\/s/ { r[++n] = $NF } END { if (n == 2 && r[1] > 0) printf "ratio two/one %.2f\n", r[2] / r[1] }' "$LOG" | tee -a "$LOG"
