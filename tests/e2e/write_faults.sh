#!/usr/bin/env bash
# Write errors are errors (issue 16, item 2). One host campaign on a 16 MiB tmpfs, its real
# scheduler and runner; four faults, each fixed and followed by a restart of the scheduler:
#   1. the disk fills up (ENOSPC): the scheduler exits 9 naming the file and the errno, with no
#      segfault and no "infinite loop closing library", and the results it could not write
#      stay in the stream unacknowledged;
#   2. an immutable task file (chattr +i; EPERM): the same;
#   3. the file system remounted read-only (EROFS): the same;
#   4. summary.json cannot be written when the campaign ends (immutable): exit 9 naming it;
#      the campaign is done in redis; a later kb-scheduler and a later kb-launch both rewrite it.
# At the end every result is in the files once (check_writer.py, check_results.py --done, h5dump)
# and the ledger is exact.
# usage: write_faults.sh BIN_DIR   (root: mount and chattr; skipped otherwise)
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (tmpfs mount, chattr)"; exit 77; fi
D=$T/tiny
mkdir -p "$D"
mount -t tmpfs -o size=16m tmpfs "$D" || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
umount_tiny() { chattr -R -i "$D" 2>/dev/null || true; umount "$D" 2>/dev/null || true; cleanup; }
trap umount_tiny EXIT
start_redis
make_campaign wf '"ladder": [{"name": "compile"}, {"name": "smoke"},
             {"name": "screen", "max_seconds": 0.2},
             {"name": "full", "min_samples": 10, "max_seconds": 0.3}]'
sed -i -e "s|\"results_dir\": \"$T/results\"|\"results_dir\": \"$D\"|" \
  -e "s|, \"$REPO_DIR/tasks/host/matmul\"||" "$T/wf.json" # one task: sum
"$BIN/kb-submit" -q submit "$T/wf.json" > /dev/null
R=$D/wf
mkdir -p "$R"

results() { rcli XLEN 'kb:{wf}:results'; }
acked() { # entries of the results stream the scheduler acknowledged
  local last pending read
  last=$(rcli XINFO GROUPS 'kb:{wf}:results' | awk 'p { print; exit } $0 == "last-delivered-id" { p = 1 }')
  [ -n "$last" ] || { echo 0; return; }
  pending=$(rcli XPENDING 'kb:{wf}:results' scheduler | head -1)
  read=$(rcli XRANGE 'kb:{wf}:results' - "$last" | grep -c '^result$' || true)
  echo $((read - pending))
}
start_sched() {
  "$BIN/kb-scheduler" --campaign wf --cache "$T/sched" 2>> "$T/sched.log" &
  SCHED=$!; BG_PIDS+=($SCHED)
}
# expect_fault WHAT PATTERN: the scheduler exits 9 by itself with PATTERN in its log
expect_fault() {
  local rc=0
  wait_pid "$SCHED" 60 || rc=$?
  [ $rc -eq 9 ] || fail "$1: scheduler exit $rc, want 9: $(tail -5 "$T/sched.log")"
  grep -q -- "$2" "$T/sched.log" || fail "$1: no \"$2\" in: $(tail -5 "$T/sched.log")"
  grep -qi "infinite loop\|segmentation\|HDF5-DIAG" "$T/sched.log" &&
    fail "$1: HDF5 shutdown trouble: $(grep -i "infinite loop\|segmentation\|HDF5-DIAG" "$T/sched.log" | head -3)"
  note "$1: exit 9, $(grep -o -- "$2.*" "$T/sched.log" | tail -1)"
}
wait_results() { # N: until the stream holds N more results than now
  local want=$(($(results) + $1))
  for _ in $(seq 300); do [ "$(results)" -ge $want ] && return 0; sleep 0.05; done
  fail "no new results (runner: $(tail -3 "$T/runner.log"))"
}

"$BIN/kb-runner" --campaign wf --cache "$T/cache" --name r1 2>> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
wait_results 1

note "1. a full disk when the first task file is made"
dd if=/dev/zero of="$D/fill" bs=64k status=none 2>/dev/null || true
start_sched
expect_fault "ENOSPC" "No space left on device (errno 28)"
grep -q "$R/[a-z]*\.h5" "$T/sched.log" || fail "the message names no task file"
[ "$(acked)" -eq 0 ] || fail "$(acked) results acknowledged though not written"
rm -f "$D/fill"
start_sched
for _ in $(seq 300); do [ "$(acked)" -ge 2 ] && break; sleep 0.05; done
[ "$(acked)" -ge 2 ] || fail "the restarted scheduler acknowledged nothing: $(tail -3 "$T/sched.log")"
kill -TERM "$SCHED"
wait_pid "$SCHED" 30 || fail "scheduler failed on SIGTERM: $(tail -3 "$T/sched.log")"

note "2. immutable task files"
chattr +i "$R"/*.h5
before=$(acked)
start_sched
expect_fault "chattr +i" "Operation not permitted (errno 1)"
[ "$(acked)" -eq "$before" ] || fail "results acknowledged though not written"
[ "$(results)" -gt "$(acked)" ] || fail "no result left unacknowledged"
chattr -i "$R"/*.h5

note "3. a read-only file system (EROFS)"
mount -o remount,ro "$D"
start_sched
expect_fault "EROFS" "Read-only file system"
[ "$(acked)" -eq "$before" ] || fail "results acknowledged though not written"
mount -o remount,rw "$D"

note "4. summary.json cannot be written at the end"
echo '{}' > "$R/summary.json"
chattr +i "$R/summary.json"
start_sched
expect_fault "summary.json" "$R/summary.json"
[ "$(rcli HGET 'kb:{wf}:meta' state)" = done ] || fail "campaign not done after the last fault"
chattr -i "$R/summary.json"
"$BIN/kb-scheduler" --campaign wf --cache "$T/sched" 2>> "$T/sched.log" ||
  fail "kb-scheduler of a done campaign failed: $(tail -3 "$T/sched.log")"
grep -q '"reason": "every candidate evaluated"' "$R/summary.json" ||
  fail "kb-scheduler did not rewrite summary.json with the reason the campaign ended"
rm "$R/summary.json"
"$BIN/kb-launch" --local --redis "$KB_REDIS" "$T/wf.json" > "$T/launch.out" 2>&1 ||
  fail "kb-launch of a done campaign failed: $(tail -3 "$T/launch.out")"
grep -q '"state"' "$R/summary.json" || fail "kb-launch did not rewrite summary.json"
grep -q "campaign wf: done" "$T/launch.out" || fail "no leaderboard: $(cat "$T/launch.out")"

wait_pid "$RUNNER" 30 || fail "runner failed: $(tail -5 "$T/runner.log")"
ledger_exact wf
done_n=$(rcli HGET 'kb:{wf}:meta' done)
dead=$(rcli HGET 'kb:{wf}:meta' dead)
$KB_PY "$TESTS_DIR/e2e/check_writer.py" "$T/redis/redis.sock" wf "$R" sum > /dev/null
$KB_PY "$TESTS_DIR/e2e/check_results.py" "$R" --campaign wf --tasks sum \
  --min-evaluations 2 --done $((done_n + dead))
for f in "$R/sum.h5"; do
  h5dump -H "$f" > /dev/null || fail "h5dump cannot read $f"
done
echo "PASS"
