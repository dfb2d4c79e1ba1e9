#!/usr/bin/env bash
# A runner whose sandboxes' folder ($TMPDIR, where each sandbox gets its working folder and the
# witness writes the outputs it compares) is full, its build cache elsewhere and fine: the
# node's fault, not the candidates'. It leaves with exit 9 and one line naming the folder and
# the errno, its items released (not an attempt), nothing recorded. Before, each full-tier
# evaluation ended `infra_error (the witness file cannot be written: No space left on device)`
# and was queued again, three times, then recorded infra_error, its last attempt: one node with
# a full /tmp used up the full tier of every honest seed. Freed, a new runner finishes the
# campaign whole, no infra_error row.
# usage: tmpdir_full.sh BIN_DIR   (root: tmpfs mount; skipped otherwise)
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (tmpfs mount)"; exit 77; fi
D=$T/tiny
mkdir -p "$D"
mount -t tmpfs -o size=64m tmpfs "$D" || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
umount_tiny() {
  for p in "${BG_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${BG_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  while mountpoint -q "$D"; do umount "$D" || break; done
  cleanup
}
trap umount_tiny EXIT
start_redis
make_campaign tfull '"ladder": [{"name": "compile"}, {"name": "smoke"},
             {"name": "screen", "max_seconds": 0.2},
             {"name": "full", "min_samples": 10, "max_seconds": 0.3}]'
"$BIN/kb-submit" -q submit "$T/tfull.json" > /dev/null
"$BIN/kb-scheduler" --campaign tfull --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
# full but for a few KiB: the sandboxes' folders are made, their witness files cannot grow
dd if=/dev/zero of="$D/fill" bs=64k 2> /dev/null || true
truncate -s -16K "$D/fill"

note "1. a runner whose \$TMPDIR is full"
rc=0
TMPDIR=$D timeout 120 "$BIN/kb-runner" --campaign tfull --cache "$T/cache" --name r1 \
  2> "$T/runner1.log" || rc=$?
[ "$rc" -eq 9 ] || fail "runner r1 exited $rc, not 9: $(tail -3 "$T/runner1.log")"
grep -q "^kb-runner: $D/kb-sandbox\.[^:]*: cannot write the witness file: No space left on device (errno 28)" \
  "$T/runner1.log" || fail "no line naming the folder: $(tail -2 "$T/runner1.log")"
[ "$(rcli ZCARD 'kb:{tfull}:lease')" -eq 0 ] || fail "runner r1 left leases behind"
[ "$(rcli HGET 'kb:{tfull}:meta' dead)" -eq 0 ] || fail "an item is dead after runner r1"
[ -z "$(rcli HGET 'kb:{tfull}:meta' infra_retries)" ] ||
  fail "the full folder used up attempts: $(rcli HGET 'kb:{tfull}:meta' infra_last)"

note "2. space freed: a new runner finishes the campaign"
rm -f "$D/fill"
TMPDIR=$D "$BIN/kb-runner" --campaign tfull --cache "$T/cache" --name r2 2> "$T/runner2.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
wait_pid "$SCHED" 120 || fail "scheduler failed: $(tail -5 "$T/sched.log")"
wait_pid "$RUNNER" 30 || fail "runner r2 failed: $(tail -5 "$T/runner2.log")"
campaign_whole tfull "$T/results/tfull" sum matmul > /dev/null
$KB_PY - "$T/results/tfull" <<'PY' || fail "a row carries the full folder's failure"
import sys, h5py
for task in ("sum", "matmul"):
    with h5py.File("%s/%s.h5" % (sys.argv[1], task), "r") as f:
        bad = [(r["tier"], r["status"].decode(), r["reason"].decode()[:120])
               for r in f["evaluations"][:] if r["status"] == b"infra_error"]
        assert not bad, "%s: %s" % (task, bad)
PY
echo "PASS"
