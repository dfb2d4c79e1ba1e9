#!/usr/bin/env bash
# The redis-server of kb-launch --local killed with kill -9 mid-campaign (the OOM killer, a
# crash), three times: the launcher notices, starts it again on its AOF (saying so), the
# scheduler and the runner reconnect and the campaign completes; kb-launch exits 0. Before this,
# the launcher waited forever on a dead socket. Then, on the AOF the launcher left: the ledger
# is exact, every result in the stream acknowledged and in its task's file once
# (check_writer.py), the files hold exactly the items done or dead (check_results.py --done).
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
unset KB_REDIS
make_campaign rk '"ladder": [{"name": "compile"}, {"name": "smoke"},
             {"name": "screen", "max_seconds": 0.2},
             {"name": "full", "min_samples": 10, "max_seconds": 0.3}]'
R=$T/results/rk
SOCK=$R/redis/redis.sock
results() { redis-cli -s "$SOCK" XLEN 'kb:{rk}:results' 2>/dev/null || echo 0; }

"$BIN/kb-launch" --local "$T/rk.json" > "$T/launch.out" 2> "$T/launch.log" &
A=$!; BG_PIDS+=($A)
for k in 1 2 3; do
  for _ in $(seq 600); do [ "$(results)" -ge $((k * 4)) ] && break; sleep 0.05; done
  [ "$(results)" -ge $((k * 4)) ] || fail "kill $k: fewer than $((k * 4)) results after 30 s"
  pid=$(cat "$R/redis/redis.pid")
  note "kill $k: redis-server $pid killed after $(results) results"
  kill -9 "$pid"
  for _ in $(seq 200); do
    [ "$(cat "$R/redis/redis.pid" 2>/dev/null)" != "$pid" ] && [ "$(results)" -gt 0 ] && break
    sleep 0.05
  done
done
wait_pid $A 180 || fail "kb-launch failed after its redis-server was killed: $(tail -5 "$T/launch.log")"
[ "$(grep -c "redis-server was killed by signal 9; starting it again on its AOF" "$T/launch.log")" -eq 3 ] ||
  fail "kb-launch did not say it restarted redis-server 3 times: $(cat "$T/launch.log")"
grep -q "campaign rk: done" "$T/launch.out" || fail "no leaderboard: $(cat "$T/launch.out")"

note "the campaign's AOF, read back"
mkdir -p "$T/redis"
redis_settings "$T/redis/settings.conf"
redis-server "$T/redis/settings.conf" --port 0 --unixsocket "$T/redis/redis.sock" \
  --unixsocketperm 700 --dir "$R/redis" --logfile "$T/redis/redis.log" \
  </dev/null >/dev/null 2>&1 &
REDIS_PID=$!
for _ in $(seq 200); do rcli ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
campaign_whole rk "$R" sum matmul
echo "PASS"
