#!/usr/bin/env bash
# A dead runner is reported (docs/cli.md, status): two leases injected into a submitted campaign
# as a killed runner leaves them, by a runner that never sent a heartbeat: one past its deadline
# (not reaped yet, since no scheduler runs), one that expires in a minute. `kb-submit status`
# lists both (runner, item, expired since or expires in, when the reaper requeues it), and
# --json has them as "stale_leases"; kb-scheduler, started over them, reaps the expired one
# and says it is waiting for the other instead of sitting silent.
# usage: dead_runner.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"

start_redis
make_campaign dr
"$BIN/kb-submit" submit "$T/dr.json" > /dev/null
# as a campaign with 2-minute leases has them (make_campaign's are 5 s): the second lease was
# taken or last extended a minute ago and expires in a minute
rcli HSET 'kb:{dr}:meta' lease_ms 120000 > /dev/null
now=$(rcli TIME | head -1)
i=0
for id in $(rcli ZRANGE 'kb:{dr}:q:0' 0 1); do
  raw=$(rcli --raw HGET 'kb:{dr}:items' "$id")
  # the item line (layout 2, kb/item.h): state|attempt|claims|cost|priority|task|token|runner|...
  leased=$(printf '%s' "$raw" | sed 's/^queued|0|0|\([^|]*|[^|]*|[^|]*\)|||||$/leased|1|1|\1|t|r-dead|||/')
  rcli ZREM 'kb:{dr}:q:0' "$id" > /dev/null
  rcli HSET 'kb:{dr}:items' "$id" "$leased" > /dev/null
  rcli ZADD 'kb:{dr}:lease' $(( (now + (i == 0 ? -30 : 60)) * 1000 )) "$id" > /dev/null
  i=$((i + 1))
done
[ "$(rcli ZCARD 'kb:{dr}:lease')" -eq 2 ] || fail "leases not injected"

note "status lists the leases of the runner that stopped"
"$BIN/kb-submit" status dr > "$T/status.txt" || fail "status failed: $(cat "$T/status.txt")"
grep -q 'leases of runners that stopped: 2' "$T/status.txt" || fail "no stale leases: $(cat "$T/status.txt")"
grep -Eq 'runner r-dead \(never sent a heartbeat\): expired (29|30|31|32|33) s ago, requeued at the next reap' \
  "$T/status.txt" || fail "expired lease: $(cat "$T/status.txt")"
grep -Eq 'runner r-dead .*: expires in (57|58|59|60|61) s, then requeued' "$T/status.txt" ||
  fail "lease to expire: $(cat "$T/status.txt")"
"$BIN/kb-submit" status --json dr > "$T/status.json"
$KB_PY - "$T/status.json" <<'PY' || fail "status --json"
import json, sys
s = json.load(open(sys.argv[1]))["stale_leases"]
assert [l["runner"] for l in s] == ["r-dead", "r-dead"], s
assert 29 <= s[0]["expired_s"] <= 33 and -61 <= s[1]["expired_s"] <= -57, s
assert s[0]["silent_s"] is None, s
PY

note "the scheduler reaps the expired lease and says what it waits for"
"$BIN/kb-scheduler" --campaign dr --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
for _ in $(seq 100); do
  grep -q 'waiting for' "$T/sched.log" && break
  kill -0 $SCHED 2> /dev/null || fail "scheduler exited: $(tail -5 "$T/sched.log")"
  sleep 0.1
done
grep -Eq 'waiting for 1 lease of runners that stopped; the last expires in (56|57|58|59|60|61) s' \
  "$T/sched.log" || fail "no word of the leases: $(cat "$T/sched.log")"
grep -q 'reaped expired leases: 1 requeued' "$T/sched.log" || fail "expired lease not reaped"
kill $SCHED; wait $SCHED 2> /dev/null || true
echo "PASS"
