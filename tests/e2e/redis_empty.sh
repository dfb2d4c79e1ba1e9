#!/usr/bin/env bash
# Redis restarted WITHOUT its data mid-campaign (its AOF gone; a new empty redis-server at the
# same address): the runner and the scheduler notice at their next script call and stop with
# exit 4 and one line saying the campaign is gone (`kb:{em}:meta does not exist: the campaign
# is gone from this redis ...`), and write nothing into the empty Redis: every script that
# changes a campaign checks its meta first (kb_gone, common/lua/lib/prelude.lua). Before, the
# runner's heartbeat re-created the runners hash, the runner left saying the campaign "stores
# its items in layout 1 (before 2026-12-07)", and the scheduler with a bare NOGROUP error.
# The task files stay as they were: readable (h5dump), no row twice, none beyond the results
# Redis had recorded.
# usage: redis_empty.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
make_campaign em
"$BIN/kb-submit" -q submit "$T/em.json" > /dev/null
"$BIN/kb-scheduler" --campaign em --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
"$BIN/kb-runner" --campaign em --cache "$T/cache" --name r1 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
results() { rcli XLEN 'kb:{em}:results'; }
for _ in $(seq 600); do [ "$(results)" -ge 6 ] && break; sleep 0.05; done
before=$(results)
[ "$before" -ge 6 ] || fail "no results: $(tail -3 "$T/runner.log")"

note "redis restarted without its data after $before results"
rcli SHUTDOWN NOSAVE > /dev/null 2>&1 || true
wait "$REDIS_PID" 2> /dev/null || true
rm -rf "$T/redis/appendonlydir" "$T/redis"/*.aof "$T/redis/dump.rdb"
start_redis
[ "$(rcli DBSIZE)" -eq 0 ] || fail "the new redis is not empty"

for who in scheduler runner; do
  pid=$SCHED log=$T/sched.log
  [ "$who" = runner ] && pid=$RUNNER log=$T/runner.log
  rc=0
  wait_pid "$pid" 30 || rc=$?
  [ "$rc" -eq 4 ] || fail "$who exited $rc, not 4: $(tail -2 "$log")"
  tail -1 "$log" | grep -q '^kb-[a-z]*: kb:{em}:meta does not exist: the campaign is gone' ||
    fail "$who did not say the campaign is gone: $(tail -1 "$log")"
done
[ "$(rcli DBSIZE)" -eq 0 ] || fail "state re-created in the empty redis: $(rcli --scan | head)"

note "the task files as the scheduler left them"
for task in sum matmul; do
  [ -f "$T/results/em/$task.h5" ] || continue
  h5dump -H "$T/results/em/$task.h5" > /dev/null || fail "h5dump cannot read $task.h5"
done
$KB_PY - "$T/results/em" "$before" <<'PY' || fail "task files"
import glob, sys, h5py
rows = []
for path in glob.glob(sys.argv[1] + "/*.h5"):
    with h5py.File(path, "r") as f:
        rows += [bytes(r["charge_id"]) for r in f["evaluations"][:]]
assert len(rows) == len(set(rows)), "a row twice"
assert 0 < len(rows) <= int(sys.argv[2]), "%d rows, %s results recorded" % (len(rows), sys.argv[2])
print("%d rows in the files, %s results in redis before" % (len(rows), sys.argv[2]), file=sys.stderr)
PY
echo "PASS"
