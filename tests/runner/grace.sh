#!/usr/bin/env bash
# kb-runner leaving on SIGTERM with and without --grace: the evaluation under way finishes and is
# recorded when it ends within the grace time, and is killed and its item released (no result,
# the reservation voided) with --grace 0; either way the runner exits 0 and no lease is left.
# The candidate spends a second or more in its first call, inside kb-sandbox.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
# a one-task bundle: the built-in sum with a single, slow seed
mkdir -p "$T/slow/seeds"
cp "$REPO_DIR/tasks/host/sum/oracle.c" "$REPO_DIR/tasks/host/sum/reference.c" "$T/slow/"
cp "$(dirname "$0")/grace/slow_sum.c" "$T/slow/seeds/slow.c"
$KB_PY - "$REPO_DIR/tasks/host/sum/task.json" "$T/slow/task.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["id"] = "slowsum"
t["seeds"] = [{"name": "slow", "source": "seeds/slow.c"}]
t["baseline"] = "slow"
t["input_sets"] = t["input_sets"][:1]
json.dump(t, open(sys.argv[2], "w"))
PY
for mode in grace nograce; do
  cid=g$mode
  cat > "$T/$cid.json" <<JSON
{"schema": "kernelbrain.campaign/1", "id": "$cid", "backend": "host",
 "tasks": ["$T/slow"], "budget": {"gpu_seconds": 600}, "lease_seconds": 30,
 "results_dir": "$T/results",
 "ladder": [{"name": "compile"}, {"name": "smoke", "max_samples": 3, "min_samples": 1,
             "warmup": 0, "timeout_seconds": 60}]}
JSON
  "$BIN/kb-submit" -q submit "$T/$cid.json" > /dev/null
  "$BIN/kb-scheduler" --campaign "$cid" --cache "$T/sched" 2> "$T/$cid.sched.log" &
  SCHED=$!; BG_PIDS+=($SCHED)
  grace=$([ $mode = grace ] && echo 30 || echo 0)
  KB_LOG=info "$BIN/kb-runner" --campaign "$cid" --cache "$T/cache" --grace "$grace" \
    2> "$T/$cid.runner.log" &
  RUNNER=$!; BG_PIDS+=($RUNNER)
  # the smoke item (":1") leased: its evaluation starts at once (the build is cached)
  for _ in $(seq 600); do
    rcli ZRANGE "kb:{$cid}:lease" 0 -1 | grep ':1$' > /dev/null && break
    sleep 0.05
  done
  rcli ZRANGE "kb:{$cid}:lease" 0 -1 | grep ':1$' > /dev/null || fail "$mode: the smoke item was never leased"
  sleep 0.3
  t0=$(date +%s.%N)
  kill -TERM $RUNNER
  wait_pid $RUNNER 60 || fail "$mode: runner exited with $?: $(tail -3 "$T/$cid.runner.log")"
  took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  kill $SCHED 2>/dev/null; wait $SCHED 2>/dev/null || true
  [ "$(rcli ZCARD "kb:{$cid}:lease")" -eq 0 ] || fail "$mode: leases left"
  results=$(rcli XLEN "kb:{$cid}:results")
  if [ $mode = grace ]; then
    # compile and smoke recorded; the smoke result is ok
    [ "$results" -eq 2 ] || fail "grace: $results results, want 2: $(tail -5 "$T/$cid.runner.log")"
    grep -q 'tier 1 (smoke): ok' "$T/$cid.runner.log" || fail "grace: no ok smoke result logged"
    grep -q 'released .*:1 ' "$T/$cid.runner.log" && fail "grace: the smoke item was released"
    # the runner's time split at exit: both items evaluated, the slow smoke evaluation counted
    grep -Eq 'time split over [0-9.]+ s, 2 items: evaluating ([1-9][0-9]*|0)\.[0-9] s' \
      "$T/$cid.runner.log" && ! grep -q 'evaluating 0\.0 s' "$T/$cid.runner.log" ||
      fail "grace: no time split with 2 items logged: $(grep 'time split' "$T/$cid.runner.log")"
  else
    [ "$results" -eq 1 ] || fail "nograce: $results results, want 1 (compile only)"
    grep -q 'stopping: released .*:1 (evaluation interrupted)' "$T/$cid.runner.log" ||
      fail "nograce: no release logged: $(tail -5 "$T/$cid.runner.log")"
    awk -v t="$took" 'BEGIN { exit !(t < 3) }' || fail "nograce: took $took s to leave"
  fi
  note "$mode: runner left $took s after SIGTERM with $results result(s)"
done
echo PASS
