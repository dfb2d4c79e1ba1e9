#!/usr/bin/env bash
# Redis over its maxmemory mid-campaign (CONFIG SET maxmemory 1, for 6 s, then lifted): every
# write command and every script that writes is refused with "OOM command not allowed" before
# it changes anything. Before this, the scheduler and the runner exited 1 at the first such
# reply, the runner with leases still held. Now both wait with backoff within their --wait
# budget, saying "out of memory (maxmemory reached); retrying", and go on once the limit is
# lifted: the campaign completes, the ledger is exact, every result in its file once.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
make_campaign mm '"ladder": [{"name": "compile"}, {"name": "smoke"},
             {"name": "screen", "max_seconds": 0.2},
             {"name": "full", "min_samples": 10, "max_seconds": 0.3}]'
"$BIN/kb-submit" -q submit "$T/mm.json" > /dev/null
"$BIN/kb-scheduler" --campaign mm --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
"$BIN/kb-runner" --campaign mm --cache "$T/cache" --name r1 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
for _ in $(seq 600); do [ "$(rcli XLEN 'kb:{mm}:results')" -ge 4 ] && break; sleep 0.05; done
[ "$(rcli HGET 'kb:{mm}:meta' state)" = running ] || fail "the campaign ended before the fault"
rcli CONFIG SET maxmemory 1 > /dev/null
note "maxmemory reached after $(rcli XLEN 'kb:{mm}:results') results"
sleep 6
kill -0 $SCHED 2> /dev/null || fail "the scheduler exited on OOM: $(tail -2 "$T/sched.log")"
kill -0 $RUNNER 2> /dev/null || fail "the runner exited on OOM: $(tail -2 "$T/runner.log")"
for log in sched runner; do
  grep -q "out of memory (maxmemory reached); retrying" "$T/$log.log" ||
    fail "$log did not say it waits for memory: $(tail -2 "$T/$log.log")"
done
rcli CONFIG SET maxmemory 0 > /dev/null
note "maxmemory lifted"
wait_pid $SCHED 120 || fail "scheduler failed: $(tail -3 "$T/sched.log")"
wait_pid $RUNNER 30 || fail "runner failed: $(tail -3 "$T/runner.log")"
campaign_whole mm "$T/results/mm" sum matmul
echo "PASS"
