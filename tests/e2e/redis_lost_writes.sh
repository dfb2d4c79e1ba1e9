#!/usr/bin/env bash
# Redis comes back without its last writes (a power loss under appendfsync everysec, a replica
# promoted): a runner holding leases whose claims redis no longer has. The runner is held still
# (SIGSTOP) while it holds leases, redis is killed and started again on a copy of its AOF taken
# before any claim; the runner goes on (SIGCONT): each completion of a claim redis lost is
# refused (KB_NOTFOUND "no charge"), and the runner drops that result and goes on serving
# (before this it exited, and the campaign hung with no runner). The scheduler, started after,
# completes the campaign: the ledger exact, every item in the files once.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
make_campaign lw '"ladder": [{"name": "compile"}, {"name": "smoke"},
             {"name": "screen", "max_seconds": 0.2},
             {"name": "full", "min_samples": 10, "max_seconds": 0.3}]'
"$BIN/kb-submit" -q submit "$T/lw.json" > /dev/null
# the AOF as it is before any claim, on disk (the copy is what a power loss leaves)
rcli CONFIG SET appendfsync always > /dev/null
rcli SET kb:test:sync 1 > /dev/null # one more write: every earlier one written and fsynced
cp -a "$T/redis/appendonlydir" "$T/aof.before"

"$BIN/kb-runner" --campaign lw --cache "$T/cache" --name r1 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
for _ in $(seq 300); do [ "$(rcli ZCARD 'kb:{lw}:lease')" -ge 1 ] && break; sleep 0.02; done
kill -STOP $RUNNER
held=$(rcli ZCARD 'kb:{lw}:lease')
[ "$held" -ge 1 ] || fail "the runner claimed nothing in 6 s"
note "runner held still with $held lease(s); redis loses every claim"
kill -9 $REDIS_PID; wait $REDIS_PID 2> /dev/null || true
rm -rf "$T/redis/appendonlydir"
mv "$T/aof.before" "$T/redis/appendonlydir"
redis-server "$T/redis/settings.conf" --port 0 --unixsocket "$T/redis/redis.sock" \
  --unixsocketperm 700 --dir "$T/redis" --logfile "$T/redis/redis.log" \
  </dev/null >/dev/null 2>&1 &
REDIS_PID=$!
for _ in $(seq 200); do rcli ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
[ "$(rcli ZCARD 'kb:{lw}:lease')" -eq 0 ] || fail "the restored AOF holds leases"
kill -CONT $RUNNER
for _ in $(seq 300); do
  grep -q "redis lost this claim" "$T/runner.log" && break
  kill -0 $RUNNER 2> /dev/null || break
  sleep 0.05
done
kill -0 $RUNNER 2> /dev/null || fail "the runner exited on a claim redis lost: $(tail -3 "$T/runner.log")"
grep -q 'no charge ".*": redis lost this claim' "$T/runner.log" ||
  fail "the runner did not say it dropped a result of a lost claim: $(tail -5 "$T/runner.log")"

"$BIN/kb-scheduler" --campaign lw --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
wait_pid $SCHED 120 || fail "scheduler failed: $(tail -5 "$T/sched.log")"
wait_pid $RUNNER 30 || fail "runner failed: $(tail -5 "$T/runner.log")"
campaign_whole lw "$T/results/lw" sum matmul
echo "PASS"
