#!/usr/bin/env bash
# CUPTI profiles through the real queue path into the HDF5 files (issue 4 item 6, issue 5 item
# 3): a real redis-server and kb-scheduler; tests/e2e/profile_runner.c stands in for a CUDA
# runner (no GPU here) and posts, through kb_queue_claim and kb_queue_complete, results with
# metrics, a trace summary, a same-run speedup and kernel records. The scheduler is killed with
# -9 twice while results arrive. Checks: the campaign ends; check_writer.py --profiles finds
# every posted value in /evaluations and /profiles/kernels, read back by h5py, each kernel row
# once; h5dump reads the kernel table.
# usage: profiles.sh BIN_DIR PROFILE_RUNNER
BIN=$1
POSTER=$2
source "$(dirname "$0")/../lib/common.sh"
start_redis
make_campaign pr
"$BIN/kb-submit" -q submit "$T/pr.json" > /dev/null
start_sched() {
  "$BIN/kb-scheduler" --campaign pr --cache "$T/sched" 2>> "$T/sched.log" &
  SCHED=$!; BG_PIDS+=($SCHED)
}
results() { rcli XLEN 'kb:{pr}:results'; }
start_sched
"$POSTER" pr 100000 > "$T/posted" 2> "$T/poster.log" &
POSTER_PID=$!; BG_PIDS+=($POSTER_PID)
for k in 1 2; do
  for _ in $(seq 200); do
    [ "$(results)" -ge $((k * 4)) ] && [ -e "$T/results/pr/sum.h5" ] && break
    sleep 0.05
  done
  kill -9 "$SCHED"; wait "$SCHED" 2> /dev/null || true
  note "kill $k after $(results) results"
  $KB_PY "$TESTS_DIR/e2e/check_writer.py" "$T/redis/redis.sock" pr "$T/results/pr" sum matmul \
    --swmr --profiles > /dev/null || fail "after kill $k (SWMR read)"
  start_sched
done
wait_pid "$SCHED" 120 || fail "scheduler failed: $(tail -5 "$T/sched.log")"
wait_pid "$POSTER_PID" 30 || fail "profile_runner failed: $(cat "$T/poster.log")"
[ "$(rcli HGET 'kb:{pr}:meta' state)" = done ] || fail "campaign not done"
ledger_exact pr
$KB_PY "$TESTS_DIR/e2e/check_writer.py" "$T/redis/redis.sock" pr "$T/results/pr" sum matmul \
  --profiles > "$T/check.json" || fail "profiles in the files"
note "$(cat "$T/check.json")"
$KB_PY - "$T/check.json" <<'PY' || fail "no kernel rows"
import json, sys
files = json.load(open(sys.argv[1]))["files"]
assert all(f["kernels"] > 0 for f in files.values()) and len(files) == 2, files
PY
h5dump -d /profiles/kernels "$T/results/pr/sum.h5" > "$T/kernels.txt" || fail "h5dump /profiles/kernels"
grep -q '"_Z4kernILi0EEvPf"' "$T/kernels.txt" || fail "h5dump shows no kernel name"
echo "PASS"
