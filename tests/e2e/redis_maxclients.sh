#!/usr/bin/env bash
# A Redis at its maxclients (Redis answers a new connection "ERR max number of clients reached"
# and closes it; at scale, a server whose open-file limit is below two connections per runner):
# - a runner started while it is full waits and retries (logging that it is full, with the
#   remedy) instead of exiting 1 ("refused PING");
# - once one connection is free the runner's main connection gets it and its heartbeat thread,
#   refused, retries each second (before, the thread ended at its first failed connect and the
#   runner evaluated on without heartbeats, its leases expiring under long evaluations);
# - room made (maxclients raised), the campaign ends whole, the second runner having evaluated.
# usage: redis_maxclients.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
make_campaign mc '"ladder": [{"name": "compile"}, {"name": "smoke"},
             {"name": "screen", "max_seconds": 0.2},
             {"name": "full", "min_samples": 10, "max_seconds": 0.3}]'
"$BIN/kb-submit" -q submit "$T/mc.json" > /dev/null
"$BIN/kb-scheduler" --campaign mc --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
"$BIN/kb-runner" --campaign mc --cache "$T/cache" --name r1 2> "$T/runner1.log" &
R1=$!; BG_PIDS+=($R1)
for _ in $(seq 600); do [ "$(rcli XLEN 'kb:{mc}:results')" -ge 2 ] && break; sleep 0.05; done
kill -STOP "$R1" # the rest of the campaign waits for the second runner

note "redis filled: maxclients = the clients connected + 2, holders take what is left"
n=$(rcli CLIENT LIST | wc -l) # this redis-cli's own connection included
rcli CONFIG SET maxclients $((n + 1)) > /dev/null
# holders until redis refuses a connection (a client of the runner or scheduler may come or go
# meanwhile): holder 1 is killed to free one connection, the last raises maxclients at the end
k=0
while [ $k -lt 10 ]; do
  k=$((k + 1))
  $KB_PY "$TESTS_DIR/e2e/redis_holder.py" "$T/redis/redis.sock" "$T/h$k.ready" "$T/h$k.go" \
    2> "$T/holder$k.log" &
  HOLDER[$k]=$!; BG_PIDS+=($!)
  for _ in $(seq 100); do [ -e "$T/h$k.ready" ] || ! kill -0 "${HOLDER[$k]}" 2> /dev/null && break; sleep 0.05; done
  [ -e "$T/h$k.ready" ] || { k=$((k - 1)); break; } # refused: full
  ! rcli PING 2>&1 | grep PONG > /dev/null && break
done
# full: no PONG (the refusal, or the connection reset before redis-cli read it)
! rcli PING 2>&1 | grep PONG > /dev/null || fail "redis is not full"
[ $k -ge 2 ] || fail "only $k holder connected"
H1=${HOLDER[1]} H2=${HOLDER[$k]}

note "a second runner started on the full server"
"$BIN/kb-runner" --campaign mc --cache "$T/cache" --name r2 2> "$T/runner2.log" &
R2=$!; BG_PIDS+=($R2)
sleep 3
kill -0 "$R2" 2> /dev/null || fail "the runner ended on a full redis: $(tail -3 "$T/runner2.log")"
grep 'at its maximum number of clients' "$T/runner2.log" > /dev/null ||
  fail "the runner does not say redis is full: $(tail -3 "$T/runner2.log")"

note "one connection freed: the runner connects, its heartbeat is refused and retries"
kill "$H1"
for _ in $(seq 400); do # its connect retries for 5 s before it says so
  grep 'heartbeat: .*trying again each second' "$T/runner2.log" > /dev/null &&
    break
  sleep 0.05
done
grep 'heartbeat: .*trying again each second' "$T/runner2.log" > /dev/null ||
  fail "no heartbeat retry: $(tail -3 "$T/runner2.log")"
kill -0 "$R2" 2> /dev/null || fail "the runner ended: $(tail -3 "$T/runner2.log")"

note "room made (maxclients 1000): the campaign ends whole"
touch "$T/h$k.go"
wait_pid "$H2" 10 || fail "the holder could not raise maxclients: $(cat "$T/holder$k.log")"
kill -CONT "$R1"
wait_pid "$SCHED" 120 || fail "scheduler failed: $(tail -5 "$T/sched.log")"
wait_pid "$R1" 60 || fail "runner 1 failed"
wait_pid "$R2" 60 || fail "runner 2 failed: $(tail -5 "$T/runner2.log")"
grep ' tier [0-9] ([a-z]*): ' "$T/runner2.log" > /dev/null ||
  fail "the second runner evaluated nothing: $(tail -5 "$T/runner2.log")"
campaign_whole mc "$T/results/mc" sum matmul > /dev/null
echo "PASS"
