#!/usr/bin/env bash
# Two runners on one GPU (issue 18: the multi-runner code paths where only one-GPU machines are
# lent): the campaign of tests/gpu/two_gpus.sh (6 suite tasks, seeds and up to KB_TWO_PER_TASK
# tune proposals each) once with kb-launch --local --gpus 0 (one runner), once with a second
# kb-runner started beside kb-launch's own, on the same GPU, against the same redis (the
# launch's unix socket) and compile cache. Each from scratch. Then, from each run's
# `kb-submit report --format json`: evaluations per runner, evaluations of one candidate at one
# tier made twice (0 expected), the ledger's spent against the rows' cost_ms (equal expected),
# evaluations per second and the two-runner/one-runner ratio. Bundle kb-launch, kb-runner,
# kb-scheduler, kb-submit, kb-sandbox-cuda into $BUNDLE (default .gpu), then on the device:
#   BUNDLE=.gpu bash tests/gpu/two_runners.sh        (writes $OUT/two-runners.txt)
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh
kb_gpu_env /usr/local/cuda/extras/CUPTI/lib64
PER_TASK=${KB_TWO_PER_TASK:-8}
# KB_TWO_BACKEND=host: the same on the CPU with examples/suite-host (a check of this script)
BACKEND=${KB_TWO_BACKEND:-cuda}
LIMIT=${KB_TWO_LIMIT_S:-150}
LOG=$OUT/two-runners.txt
kb_gpu_log "$LOG"
run() { # label runners
  local label=$1 runners=$2 dir
  dir=$(mktemp -d)
  kb_six_task_campaign "$dir" tworun "$PER_TASK" "$BACKEND" > "$dir/campaign.json"
  local t0 t1 rc extra=""
  t0=$(date +%s.%N)
  local devs=(--gpus 0)
  [ "$BACKEND" = host ] && devs=(--runners 1)
  timeout -s INT "$LIMIT" kb-launch --local "${devs[@]}" "$dir/campaign.json" > "$dir/out.txt" 2>&1 &
  local launch=$!
  if [ "$runners" = 2 ]; then
    local sock="$dir/results/tworun/redis/redis.sock" i
    for i in $(seq 1 300); do [ -S "$sock" ] && break; sleep 0.1; done
    CUDA_VISIBLE_DEVICES=0 kb-runner --campaign tworun --redis "unix:$sock" \
      --cache "$dir/results/tworun/redis/cache" --name extra-0 --backend "$BACKEND" \
      > "$dir/extra.log" 2>&1 &
    extra=$!
  fi
  wait $launch
  rc=$?
  t1=$(date +%s.%N)
  [ -n "$extra" ] && { wait "$extra"; echo "extra runner exit $?" >> "$LOG"; tail -3 "$dir/extra.log" >> "$LOG"; }
  grep -E '^(started|campaign|budget)' "$dir/out.txt" >> "$LOG"
  kb-submit report --format json --out "$dir/report.json" "$dir/results/tworun" >> "$LOG" 2>&1
  python3 - "$dir/report.json" "$label" "$rc" "$t0" "$t1" <<'PY' | tee -a "$LOG"
import collections, json, sys
r = json.load(open(sys.argv[1]))
label, rc, t0, t1 = sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
per_runner, seen, dup, rows_ms, n = collections.Counter(), collections.Counter(), 0, 0, 0
for t in r["tasks"]:
    for c in t["candidates"]:
        for e in c["evaluations"]:
            n += 1
            per_runner[e["runner"]] += 1
            rows_ms += e["cost_ms"]
            key = (t["task"], c["candidate"], e["tier"], e["attempt"])
            seen[key] += 1
dup = sum(v - 1 for v in seen.values() if v > 1)
wall = t1 - t0
print("%-11s exit %d  evaluations %d  wall_s %.1f  evaluations/s %.2f  per runner %s  "
      "duplicates %d  ledger spent %d ms  rows %d ms  %s" % (
          label, rc, n, wall, n / wall, dict(per_runner), dup, r["gpu_ms"]["spent"], rows_ms,
          "exact" if r["gpu_ms"]["spent"] == rows_ms else "DIFFER"))
PY
  cp "$dir/out.txt" "$OUT/$label-launch.txt" 2>/dev/null
}
run one-runner 1
run two-runners 2
awk '/evaluations\/s/ { for (i = 1; i <= NF; i++) if ($i == "evaluations/s") r[++n] = $(i + 1) } END { if (n == 2 && r[1] > 0) printf "ratio two/one %.2f\n", r[2] / r[1] }' "$LOG" | tee -a "$LOG"
