#!/usr/bin/env bash
# One launcher per campaign (issue 16, item 3), kb-launch --local with its own redis-server:
#   - KB_REDIS_PASSWORD in the environment: not used for the redis kb-launch starts, no timeout;
#   - a second kb-launch of the same campaign is refused (exit 5) naming the first one's pid,
#     host and start time, and starts no second redis-server;
#   - kill -9 of the first: its redis-server, scheduler and runner die with it;
#   - a redis-server left on the campaign's socket and AOF (as a launcher of an older version
#     left them) is stopped by the rerun, which completes the campaign: the ledger exact, every
#     result once, nothing left running.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
unset KB_REDIS
make_campaign ll '"ladder": [{"name": "compile"}, {"name": "smoke"},
             {"name": "screen", "max_seconds": 0.2},
             {"name": "full", "min_samples": 10, "max_seconds": 0.3}]'
sed -i "s|, \"$REPO_DIR/tasks/host/matmul\"||" "$T/ll.json" # one task: sum
R=$T/results/ll
SOCK=$R/redis/redis.sock
running() { pgrep -f "$R/redis" || true; }
# nothing of the campaign's running, twice 0.2 s apart: a runner forking a sandbox as it dies
# leaves a child with its command line for a moment (an ASan CI run saw one at the check that
# was gone when ps looked)
gone() { [ -z "$(running)" ] && sleep 0.2 && [ -z "$(running)" ]; }
left() { local p; p=$(running | paste -sd,); [ -z "$p" ] || ps -o pid,args -p "$p" || true; }

note "a launcher, with KB_REDIS_PASSWORD set"
KB_REDIS_PASSWORD=not-for-our-redis "$BIN/kb-launch" --local "$T/ll.json" > "$T/a.out" 2> "$T/a.err" &
A=$!; BG_PIDS+=($A)
for _ in $(seq 100); do grep -q "started kb-scheduler" "$T/a.out" && break; sleep 0.05; done
grep -q "started kb-scheduler" "$T/a.out" ||
  fail "kb-launch did not start within 5 s: $(cat "$T/a.err")"
grep -q "KB_REDIS_PASSWORD(_FILE) not used" "$T/a.err" || fail "no word on the password: $(cat "$T/a.err")"

note "a second launcher of the same campaign"
rc=0
"$BIN/kb-launch" --local "$T/ll.json" > "$T/b.out" 2> "$T/b.err" || rc=$?
[ $rc -eq 5 ] || fail "second kb-launch exit $rc, want 5: $(cat "$T/b.err")"
grep -q "another kb-launch runs this campaign (pid=$A host=$(hostname) since=20" "$T/b.err" ||
  fail "the refusal does not name the first launcher (pid $A): $(cat "$T/b.err")"
[ "$(pgrep -fc "redis-server.*$R/redis")" -eq 1 ] || fail "not exactly one redis-server"
[ -S "$SOCK" ] || fail "the second launcher removed the socket"

note "kill -9 of the first launcher mid-campaign"
for _ in $(seq 200); do
  [ "$(redis-cli -s "$SOCK" XLEN 'kb:{ll}:results' 2>/dev/null || echo 0)" -ge 2 ] && break
  sleep 0.05
done
kill -9 $A
for _ in $(seq 100); do gone && break; sleep 0.05; done
gone || fail "left running after kill -9 of kb-launch: $(left)"

note "a redis-server left on the campaign's AOF, then the rerun"
redis_settings "$T/settings.conf"
redis-server "$T/settings.conf" --port 0 --unixsocket "$SOCK" --unixsocketperm 700 \
  --dir "$R/redis" --daemonize yes --logfile "$R/redis/orphan.log" \
  --pidfile "$T/orphan.pid" > /dev/null
for _ in $(seq 100); do redis-cli -s "$SOCK" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
BG_PIDS+=("$(cat "$T/orphan.pid")") # stopped by the rerun; by the cleanup if the test fails first
"$BIN/kb-launch" --local "$T/ll.json" > "$T/c.out" 2> "$T/c.err" ||
  fail "rerun failed: $(tail -5 "$T/c.err"; tail -5 "$R"/redis/scheduler*.log 2>/dev/null)"
grep -q "stopped 1 process a killed kb-launch left running" "$T/c.err" ||
  fail "the rerun did not stop the redis left behind: $(cat "$T/c.err")"
for _ in $(seq 50); do gone && break; sleep 0.05; done
gone || fail "left running after the rerun: $(left)"
$KB_PY - "$R/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
g = s["gpu_ms"]
assert s["state"] == "done", s["state"]
assert g["available"] + g["held"] + g["spent"] == g["total"] and g["held"] == 0, g
print(f"ledger: {g}, items {s['items']}", file=sys.stderr)
PY
done_n=$($KB_PY -c 'import json,sys; i=json.load(open(sys.argv[1]))["items"]; print(i["done"]+i["dead"])' "$R/summary.json")
$KB_PY "$TESTS_DIR/e2e/check_results.py" "$R" --campaign ll --tasks sum \
  --min-evaluations 2 --done "$done_n"
echo "PASS"
