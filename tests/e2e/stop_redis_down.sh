#!/usr/bin/env bash
# Asked to stop while Redis is down (Slurm's SIGTERM at a cancel or preemption, Ctrl-C, as the
# node's Redis is lost): kb-runner and kb-scheduler leave within seconds (KB_REDIS_STOP_WAIT_MS,
# kb/redis.h), exit 4 naming redis. Before, each command waited out its whole --wait budget
# first: the runner 124 s (two budgets of the default 60 s: its last call, then its leases'
# release), the scheduler 60 s, past Slurm's KillWait. Then Redis back on its AOF and a new
# scheduler and runner finish the campaign whole: the leases the runner could not release
# expire and are requeued, nothing lost or charged twice.
# usage: stop_redis_down.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
make_campaign sd '"ladder": [{"name": "compile"}, {"name": "smoke"},
             {"name": "screen", "max_seconds": 0.2},
             {"name": "full", "min_samples": 10, "max_seconds": 0.3}]'
"$BIN/kb-submit" -q submit "$T/sd.json" > /dev/null
"$BIN/kb-scheduler" --campaign sd --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
"$BIN/kb-runner" --campaign sd --cache "$T/cache" 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
for _ in $(seq 600); do
  [ "$(grep -c 'tier smoke' "$T/sched.log")" -ge 1 ] && break
  sleep 0.05
done
grep -q 'tier smoke' "$T/sched.log" || fail "no result before the fault"

note "redis killed, then SIGTERM to the runner and the scheduler"
kill -9 "$REDIS_PID"; wait "$REDIS_PID" 2> /dev/null || true
REDIS_PID=""
sleep 0.5
kill -TERM $RUNNER $SCHED
for p in $RUNNER $SCHED; do
  rc=0
  wait_pid $p 20 || rc=$?
  [ "$rc" -eq 4 ] || fail "exit $rc, not 4, of $(cat /proc/$p/comm 2> /dev/null || echo "pid $p")"
done
grep -q 'kb-runner: .*redis' "$T/runner.log" || fail "the runner does not name redis"
grep -q 'kb-scheduler: .*redis' "$T/sched.log" || fail "the scheduler does not name redis"

note "redis back on its AOF: a new scheduler and runner finish the campaign"
start_redis
"$BIN/kb-scheduler" --campaign sd --cache "$T/sched" 2> "$T/sched2.log" &
SCHED=$!; BG_PIDS+=($SCHED)
"$BIN/kb-runner" --campaign sd --cache "$T/cache" 2> "$T/runner2.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
wait_pid $SCHED 120 || fail "scheduler failed"
wait_pid $RUNNER 60 || fail "runner failed"
campaign_whole sd "$T/results/sd" sum matmul > /dev/null
echo "PASS"
