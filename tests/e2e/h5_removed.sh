#!/usr/bin/env bash
# A task file removed while the scheduler has it open (rm of results/<campaign>/sum.h5, a
# cleanup script, a user): before this, the scheduler went on writing into the unlinked file,
# acknowledged every result, exited 0, and the task's results were in no file. Now it finds at
# the next commit that the path no longer names its file, acknowledges nothing more, and exits 9
# naming the file; the next kb-scheduler makes the file again from the results stream
# ("rebuilding it from the results retained in redis"). Then the same with the file replaced by
# another one (mv over it). Then the file cut to half its size while no scheduler runs (a
# truncated copy, a disk that lost its tail): before this, recovery (h5clear) opened it, the
# committed rows named bytes past the cut, which read back as zeros (sources that define
# nothing); now the store says the file was cut short and the scheduler rebuilds it from redis.
# At the end every result is in its file once, the ledger is exact.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
make_campaign hr '"ladder": [{"name": "compile"}, {"name": "smoke"},
             {"name": "screen", "max_seconds": 0.2},
             {"name": "full", "min_samples": 10, "max_seconds": 0.3}]'
"$BIN/kb-submit" -q submit "$T/hr.json" > /dev/null
R=$T/results/hr
touch "$T/sched.log"
results() { rcli XLEN 'kb:{hr}:results'; }
start_sched() {
  LOG_AT=$(wc -l < "$T/sched.log")
  "$BIN/kb-scheduler" --campaign hr --cache "$T/sched" 2>> "$T/sched.log" &
  SCHED=$!; BG_PIDS+=($SCHED)
}
# fault WHAT PATTERN COMMAND...: once sum.h5 holds a row, runs COMMAND with the runner held
# still (so a result is sure to come after), then expects exit 9 with PATTERN
fault() {
  local what=$1 pattern=$2 rc=0 log
  shift 2
  for _ in $(seq 400); do
    [ -f "$R/sum.h5" ] && [ "$(rcli XPENDING 'kb:{hr}:results' scheduler | head -1)" = 0 ] &&
      [ "$(rcli HGET 'kb:{hr}:meta' open)" -ge 3 ] && break
    sleep 0.05
  done
  kill -STOP $RUNNER
  "$@"
  kill -CONT $RUNNER
  wait_pid $SCHED 60 || rc=$?
  log=$(tail -n +$((LOG_AT + 1)) "$T/sched.log")
  [ $rc -eq 9 ] || fail "$what: scheduler exit $rc, want 9: $(tail -3 <<< "$log")"
  grep -q -- "$pattern" <<< "$log" || fail "$what: no \"$pattern\" in: $(tail -3 <<< "$log")"
  note "$what: exit 9, $(grep -o -- "$R/sum.h5: cannot.*" <<< "$log" | tail -1)"
}
"$BIN/kb-runner" --campaign hr --cache "$T/cache" --name r1 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)

start_sched
fault "removed" "$R/sum.h5: cannot commit: the file was removed while open" rm "$R/sum.h5"
start_sched
fault "replaced" "$R/sum.h5: cannot commit: the file was replaced while open" \
  bash -c "cp '$R/sum.h5' '$T/copy.h5' && mv '$T/copy.h5' '$R/sum.h5'"
grep -q "$R/sum.h5: no such file, though the results stream holds results of task \"sum\"; rebuilding" \
  "$T/sched.log" || fail "the restart did not say it rebuilt the removed file"
size=$(stat -c %s "$R/sum.h5")
truncate -s $((size / 2)) "$R/sum.h5"
note "sum.h5 cut from $size to $((size / 2)) bytes"
start_sched
wait_pid $SCHED 120 || fail "scheduler failed: $(tail -3 "$T/sched.log")"
wait_pid $RUNNER 30 || fail "runner failed: $(tail -3 "$T/runner.log")"
grep -q "$R/sum.h5: cannot open: the file ends at byte $((size / 2)), before the committed data of .*: it was cut short; rebuilding" \
  "$T/sched.log" || fail "the restart did not find sum.h5 cut short: $(grep sum.h5 "$T/sched.log" | tail -3)"
campaign_whole hr "$R" sum matmul
h5dump -H "$R/sum.h5" > /dev/null || fail "h5dump cannot read sum.h5"
echo "PASS"
