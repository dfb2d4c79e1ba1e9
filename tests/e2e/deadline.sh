#!/usr/bin/env bash
# A campaign whose deadline passes mid-run ends whole. Before, the scheduler ended it ("done:
# deadline passed") the moment the deadline passed and exited, while the runner's evaluation
# under way went on: its result was charged and appended to the stream after the scheduler
# left, and no file held it (11 results in the stream, 10 rows). Now the deadline drains the
# campaign (running -> draining, reason "deadline passed": nothing new starts, the items held
# but not under evaluation are released) and it ends once the evaluations under way are
# recorded: every result in the files once, nothing pending, the ledger exact. The results
# folder is a path with a space and a non-ASCII letter.
# usage: deadline.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
RES="$T/rés ults"
dl=$(date -u -d '+6 seconds' +%Y-%m-%dT%H:%M:%SZ)
make_campaign dl "\"deadline\": \"$dl\""
sed -i "s|\"results_dir\": \"$T/results\"|\"results_dir\": \"$RES\"|" "$T/dl.json"
"$BIN/kb-submit" -q submit "$T/dl.json" > /dev/null
"$BIN/kb-scheduler" --campaign dl --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
"$BIN/kb-runner" --campaign dl --cache "$T/cache" --name r1 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
wait_pid "$SCHED" 120 || fail "scheduler failed: $(tail -3 "$T/sched.log")"
wait_pid "$RUNNER" 60 || fail "runner failed: $(tail -3 "$T/runner.log")"

campaign_whole dl "$RES/dl" sum matmul
grep -q 'deadline passed: no new evaluations start; the campaign ends once the [1-9][0-9]* under way are recorded' \
  "$T/sched.log" || fail "no evaluation was under way at the deadline: $(grep -i deadline "$T/sched.log")"
[ "$(rcli HGET 'kb:{dl}:meta' state_reason)" = "deadline passed" ] ||
  fail "ended for: $(rcli HGET 'kb:{dl}:meta' state_reason)"
rcli --raw XRANGE 'kb:{dl}:events' - + | tr '\n' ' ' |
  grep -q 'from running to draining reason deadline passed.*from draining to done' ||
  fail "not drained at the deadline: $(rcli --raw XRANGE 'kb:{dl}:events' - + | tr '\n' ' ')"
[ "$(rcli HGET 'kb:{dl}:meta' open)" -ge 1 ] || fail "the campaign had finished before its deadline"
$KB_PY -c 'import json, sys; s = json.load(open(sys.argv[1])); assert s["reason"] == "deadline passed", s["reason"]' \
  "$RES/dl/summary.json" || fail "summary.json"
echo "PASS"
