#!/usr/bin/env bash
# Redis's disk full mid-campaign (its folder on an 8 MiB tmpfs, filled for 6 s, then freed):
# Redis cannot write its append-only file and refuses every write, and every script at its
# first write, with "MISCONF Errors writing to the AOF file: No space left on device", before
# it changed anything. Before, the runner and the scheduler exited 1 at the first such reply
# (the runner with its leases held: every runner of a cluster gone within a second). Now both
# wait as for maxmemory (redis_oom.sh), within their --wait budget, saying "cannot write its
# data to disk (MISCONF ...); retrying", and go on once the disk is freed: the campaign
# completes, the ledger is exact, every result in its file once. Needs root (mount); skipped
# otherwise.
# usage: redis_disk_full.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to mount a tmpfs"; exit 77; }
mkdir -p "$T/redis"
mount -t tmpfs -o size=8m tmpfs "$T/redis" || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
unmount() { redis-cli -s "$T/redis/redis.sock" shutdown nosave > /dev/null 2>&1 || true
            sleep 0.2; umount -l "$T/redis" 2> /dev/null || true; }
trap 'unmount; cleanup' EXIT
start_redis
make_campaign df '"ladder": [{"name": "compile"}, {"name": "smoke"},
             {"name": "screen", "max_seconds": 0.2},
             {"name": "full", "min_samples": 10, "max_seconds": 0.3}]'
"$BIN/kb-submit" -q submit "$T/df.json" > /dev/null
"$BIN/kb-scheduler" --campaign df --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
"$BIN/kb-runner" --campaign df --cache "$T/cache" --name r1 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
for _ in $(seq 600); do [ "$(rcli XLEN 'kb:{df}:results')" -ge 4 ] && break; sleep 0.05; done
[ "$(rcli HGET 'kb:{df}:meta' state)" = running ] || fail "the campaign ended before the fault"
dd if=/dev/zero of="$T/redis/fill" bs=1M count=16 2> /dev/null || true
note "redis's disk full after $(rcli XLEN 'kb:{df}:results') results"
for _ in $(seq 100); do rcli SET probe 1 | grep -q MISCONF && break; sleep 0.1; done
rcli SET probe 1 | grep -q MISCONF || fail "redis does not refuse writes on its full disk"
sleep 6
kill -0 $SCHED 2> /dev/null || fail "the scheduler exited on MISCONF: $(tail -2 "$T/sched.log")"
kill -0 $RUNNER 2> /dev/null || fail "the runner exited on MISCONF: $(tail -2 "$T/runner.log")"
for log in sched runner; do
  grep -q "cannot write its data to disk (MISCONF: its disk full or failing); retrying" \
    "$T/$log.log" || fail "$log did not say it waits for redis's disk: $(tail -2 "$T/$log.log")"
done
rm -f "$T/redis/fill"
note "disk freed"
wait_pid $SCHED 120 || fail "scheduler failed: $(tail -3 "$T/sched.log")"
wait_pid $RUNNER 30 || fail "runner failed: $(tail -3 "$T/runner.log")"
campaign_whole df "$T/results/df" sum matmul > /dev/null
echo "PASS"
