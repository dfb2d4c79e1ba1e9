#!/usr/bin/env bash
# A runner whose build cache cannot be written (a full disk, here a 64 MiB tmpfs filled to its
# last 12 KiB) is the machine's fault, not the candidates': it leaves with exit 9 and one line
# naming the cache folder and the errno, its items released (not an attempt), nothing recorded
# and no compile failure remembered in the cache. Before, the runner stayed and failed every
# item it claimed within milliseconds, each attempt an infra_error (the compiler's "No space
# left on device" even cached as the oracle's or candidate's compile error), so one node with
# a full /tmp used up every item's attempts and the campaign ended with them all dead.
#   1. the disk is full when the runner starts: exit 9 before any result;
#   2. the disk fills up under a runner that has evaluated items: exit 9 at its next build;
#   3. space freed: a new runner finishes the campaign whole (campaign_whole), no infra_error
#      or compile_error row, no item dead, no ".err" in the cache.
# usage: cache_full.sh BIN_DIR   (root: tmpfs mount; skipped otherwise)
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (tmpfs mount)"; exit 77; fi
D=$T/tiny
mkdir -p "$D"
mount -t tmpfs -o size=64m tmpfs "$D" || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
umount_tiny() {
  for p in "${BG_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${BG_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done # they held files in $D
  while mountpoint -q "$D"; do umount "$D" || break; done
  cleanup
}
trap umount_tiny EXIT
CACHE=$D/cache
mkdir -p "$CACHE"
fill() { # leaves 12 KiB free
  dd if=/dev/zero of="$D/fill" bs=64k 2> /dev/null || true
  truncate -s -12K "$D/fill"
}
start_redis
make_campaign cfull
"$BIN/kb-submit" -q submit "$T/cfull.json" > /dev/null
"$BIN/kb-scheduler" --campaign cfull --cache "$T/sched" 2>> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
n=0
start_runner() {
  n=$((n + 1))
  "$BIN/kb-runner" --campaign cfull --cache "$CACHE" --name "r$n" 2> "$T/runner$n.log" &
  RUNNER=$!; BG_PIDS+=($RUNNER)
}
# the runner's exit code, which must be 9 with the one line naming the cache and the errno
left_full() {
  local rc=0
  wait_pid "$RUNNER" 30 || rc=$?
  [ "$rc" -eq 9 ] || fail "runner r$n exited $rc, not 9: $(tail -3 "$T/runner$n.log")"
  grep -q "^kb-runner: $CACHE: cannot build: No space left on device (errno 28)" \
    "$T/runner$n.log" || fail "runner r$n: no line naming the cache: $(tail -2 "$T/runner$n.log")"
  [ "$(rcli ZCARD 'kb:{cfull}:lease')" -eq 0 ] || fail "runner r$n left leases behind"
  [ "$(rcli HGET 'kb:{cfull}:meta' dead)" -eq 0 ] || fail "an item is dead after runner r$n"
  [ -z "$(rcli HGET 'kb:{cfull}:meta' infra_retries)" ] ||
    fail "the full disk used up attempts: $(rcli HGET 'kb:{cfull}:meta' infra_last)"
  ! ls "$CACHE" | grep '\.err$' > /dev/null || fail "a compile failure of the full disk was cached"
}
results() { rcli XLEN 'kb:{cfull}:results'; }

note "1. the disk is full when the runner starts"
fill
start_runner
left_full
[ "$(results)" -eq 0 ] || fail "results recorded from a runner that cannot build"

note "2. the disk fills up under a runner that has evaluated items"
rm -f "$D/fill"
start_runner
for _ in $(seq 300); do [ "$(results)" -ge 2 ] && break; sleep 0.05; done
[ "$(results)" -ge 2 ] || fail "no result from runner r$n: $(tail -3 "$T/runner$n.log")"
fill
before=$(results)
left_full
note "runner r$n left after $before results"

note "3. space freed: a new runner finishes the campaign"
rm -f "$D/fill"
start_runner
wait_pid "$SCHED" 300 || fail "scheduler failed: $(tail -5 "$T/sched.log")"
wait_pid "$RUNNER" 30 || fail "runner r$n failed: $(tail -5 "$T/runner$n.log")"
campaign_whole cfull "$T/results/cfull" sum matmul
$KB_PY - "$T/results/cfull" <<'PY' || fail "a row carries the full disk's failure"
import sys, h5py
for task in ("sum", "matmul"):
    with h5py.File("%s/%s.h5" % (sys.argv[1], task), "r") as f:
        bad = [(r["tier"], r["status"].decode(), r["reason"].decode()[:120])
               for r in f["evaluations"][:]
               if r["status"] in (b"infra_error", b"compile_error")]
        assert not bad, "%s: %s" % (task, bad)
PY
! ls "$CACHE" | grep '\.err$' > /dev/null || fail "a compile failure of the full disk was cached"
echo "PASS"
