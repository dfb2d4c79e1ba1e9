#!/usr/bin/env bash
# A Redis that keeps its connections open and answers nothing (stopped with SIGSTOP: a hung
# server, a frozen or swapping host), in two parts:
# 1. For 4 s while a campaign runs, with KB_REDIS_REPLY_TIMEOUT_MS=1000 (kb/redis.h): kb-runner
#    and kb-scheduler count the connection lost after 1 s without a reply, log it, reconnect
#    (the handshake's PING times out too) and, once Redis answers again, go on: the campaign
#    continues. Before, each blocked in read(2) until Redis came back, however long.
# 2. Stopped again, then SIGTERM to both (the default reply timeout of 15 s): they leave within
#    KB_REDIS_STOP_WAIT_MS of the signal, exit 4 naming redis. Before, SIGTERM waited for Redis:
#    hiredis's blocking read retries after EINTR.
# Then Redis continues, and a new scheduler and runner finish the campaign whole: nothing lost
# or charged twice (the commands the first pair sent into the stopped server and gave up on are
# applied when it continues, then sent again or their leases expire).
# usage: redis_hung.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
make_campaign rh '"ladder": [{"name": "compile"}, {"name": "smoke"},
             {"name": "screen", "max_seconds": 0.2},
             {"name": "full", "min_samples": 10, "max_seconds": 0.3}]'
"$BIN/kb-submit" -q submit "$T/rh.json" > /dev/null
start_pair() { # start_pair SUFFIX [env assignments...]
  local sfx=$1
  shift
  env "$@" "$BIN/kb-scheduler" --campaign rh --cache "$T/sched" 2> "$T/sched$sfx.log" &
  SCHED=$!; BG_PIDS+=($SCHED)
  env "$@" "$BIN/kb-runner" --campaign rh --cache "$T/cache" 2> "$T/runner$sfx.log" &
  RUNNER=$!; BG_PIDS+=($RUNNER)
}
results() { rcli XLEN 'kb:{rh}:results'; }
wait_results() { # wait_results N: at least N results posted
  for _ in $(seq 600); do [ "$(results)" -ge "$1" ] && return 0; sleep 0.05; done
  fail "fewer than $1 results after 30 s ($(results))"
}

start_pair 1 KB_REDIS_REPLY_TIMEOUT_MS=1000
wait_results 2
note "redis stopped for 4 s under a running campaign (reply timeout 1 s)"
kill -STOP "$REDIS_PID"
sleep 4
kill -CONT "$REDIS_PID"
before=$(results)
for p in $RUNNER $SCHED; do
  kill -0 "$p" 2> /dev/null || fail "$(cat /proc/$p/comm 2> /dev/null || echo "pid $p") ended"
done
wait_results $((before + 3))
for log in sched1 runner1; do
  grep 'no reply in [0-9]* ms' "$T/$log.log" > /dev/null ||
    fail "$log.log does not say redis stopped answering: $(tail -3 "$T/$log.log")"
done
note "both went on after redis continued: $(results) results"

note "redis stopped again, then SIGTERM to the runner and the scheduler"
kill -STOP "$REDIS_PID"
sleep 0.5
t0=$(date +%s%N)
kill -TERM $RUNNER $SCHED
for p in $RUNNER $SCHED; do
  rc=0
  wait_pid $p 20 || rc=$?
  [ "$rc" -eq 4 ] || fail "exit $rc, not 4, of pid $p"
done
ms=$((($(date +%s%N) - t0) / 1000000))
note "both left ${ms} ms after SIGTERM"
[ "$ms" -le 8000 ] || fail "they took $ms ms to leave (KB_REDIS_STOP_WAIT_MS is 2000)"
grep -q 'kb-runner: .*redis' "$T/runner1.log" || fail "the runner does not name redis"
grep -q 'kb-scheduler: .*redis' "$T/sched1.log" || fail "the scheduler does not name redis"

note "redis continues: a new scheduler and runner finish the campaign"
kill -CONT "$REDIS_PID"
start_pair 2
wait_pid $SCHED 120 || fail "scheduler failed"
wait_pid $RUNNER 60 || fail "runner failed"
campaign_whole rh "$T/results/rh" sum matmul > /dev/null
echo "PASS"
