#!/usr/bin/env bash
# Write errors are errors (issue 16, item 2). One host campaign, its real scheduler and runner,
# its results folder on a 16 MiB tmpfs, then moved to an ext4, a btrfs and a "thin" ext4 on loop
# files; nine real faults (no mock), each fixed and followed by a restart of the scheduler. Each
# time the scheduler exits 9 by itself with one line naming the file and the errno, with no
# segfault and no "infinite loop closing library", and the results it could not write stay in
# the stream unacknowledged:
#   1. the disk is full when the first task file is made (ENOSPC);
#   2. the disk fails while the task file is open (EIO: ext4 shut down, FS_IOC_SHUTDOWN);
#   3. the quota runs out while the task file is open (EDQUOT: a btrfs qgroup limit);
#   4. the disk fills up while the task file is open (ENOSPC on btrfs, where the next flush needs
#      new space: copy on write);
#   5. thin-provisioned storage runs out (an ext4 whose loop file lies on a full tmpfs): HDF5's
#      writes succeed into the page cache, the fsync fails (ENOSPC or EIO);
#      after 2.-5. the file as the failed writer left it (the fault fixed; after 5. as the disk
#      holds it) is read by h5py as a SWMR reader: every result acknowledged so far is there;
#   6. an immutable task file (chattr +i; EPERM);
#   7. the file system remounted read-only (EROFS);
#   8. summary.json cannot be written when the campaign ends (immutable): exit 9 naming it;
#      the campaign is done in redis;
#   9. then a kb-scheduler of the done campaign on the thin storage run out: summary.json's
#      fsync fails, exit 9 naming it; a later kb-scheduler and a later kb-launch both rewrite it.
# At the end every result is in the files once (check_writer.py: rows == results acknowledged ==
# results in the stream; check_results.py --done, h5dump) and the ledger is exact.
# usage: write_faults.sh BIN_DIR   (root: mount and chattr; skipped otherwise; exit 77 naming
# what this kernel lacks when it cannot mount ext4 or btrfs, after every other fault passed)
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (tmpfs mount, chattr)"; exit 77; fi
D=$T/tiny
mkdir -p "$D"
touch "$T/sched.log"
mount -t tmpfs -o size=16m tmpfs "$D" || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
umount_tiny() {
  for p in "${BG_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${BG_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done # they held files in $D
  chattr -R -i "$D" 2>/dev/null || true
  while mountpoint -q "$D"; do umount "$D" || break; done
  ! mountpoint -q "$T/thin" || umount "$T/thin" || true
  cleanup
}
trap umount_tiny EXIT
for tool in mke2fs:e2fsprogs mkfs.btrfs:btrfs-progs btrfs:btrfs-progs h5dump:hdf5-tools; do
  command -v "${tool%%:*}" > /dev/null ||
    fail "no ${tool%%:*}: install ${tool#*:} (scripts/install-deps.sh)"
done
skipped=()
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
  LOG_AT=$(wc -l < "$T/sched.log")
  "$BIN/kb-scheduler" --campaign wf --cache "$T/sched" 2>> "$T/sched.log" &
  SCHED=$!; BG_PIDS+=($SCHED)
}
# expect_fault WHAT PATTERN: the scheduler exits 9 by itself with PATTERN (grep) in what it
# logged since start_sched
expect_fault() {
  local rc=0 log
  wait_pid "$SCHED" 60 || rc=$?
  log=$(tail -n +$((LOG_AT + 1)) "$T/sched.log")
  [ $rc -eq 9 ] || fail "$1: scheduler exit $rc, want 9: $(tail -5 <<< "$log")"
  grep -q -- "$2" <<< "$log" || fail "$1: no \"$2\" in: $(tail -5 <<< "$log")"
  grep -qi "infinite loop\|segmentation\|HDF5-DIAG" <<< "$log" &&
    fail "$1: HDF5 shutdown trouble: $(grep -i "infinite loop\|segmentation\|HDF5-DIAG" <<< "$log" | head -3)"
  note "$1: exit 9, $(grep -o -- "$2.*" <<< "$log" | tail -1)"
}
caught_up() { [ -f "$R/sum.h5" ] && [ "$(acked)" -eq "$(results)" ]; }
# wait_caught_up WHAT: until the scheduler has written every result in the stream, once (a
# result may arrive right after; not asked again)
wait_caught_up() {
  for _ in $(seq 1200); do caught_up && return 0; sleep 0.05; done
  fail "$1: the scheduler acknowledged $(acked) of $(results) results: $(tail -3 "$T/sched.log")"
}
# mid_file_fault WHAT PATTERN FAULT FIX: starts the scheduler, waits until it has written every
# result so far (its task file open), runs function FAULT, and expects the scheduler to fail on
# the next result: exit 9 naming the task file and PATTERN, that result left in the stream. Then
# runs function FIX and reads the task file as the failed writer left it, as a SWMR reader
# (h5py) does: every result acknowledged so far is there.
mid_file_fault() {
  local what=$1 pattern=$2 fault=$3 fix=$4
  start_sched
  wait_caught_up "$what"
  $fault
  expect_fault "$what" "$R/sum.h5: .*$pattern"
  [ "$(results)" -gt "$(acked)" ] || fail "$what: no result left unacknowledged"
  $fix
  $KB_PY "$TESTS_DIR/e2e/check_writer.py" "$T/redis/redis.sock" wf "$R" sum --swmr > /dev/null ||
    fail "$what: the task file as the failed write left it is not readable"
}
# The faults and their fixes. fill_disk: fills the file system at $D.
fill_disk() { dd if=/dev/zero of="$D/fill" bs=64k status=none 2>/dev/null || true; }
unfill_disk() { rm -f "$D/fill"; }
# quota_out, quota_lifted: the limit of the results folder's qgroup 0/<its subvolume id>, set
# through the top volume (a change through the folder itself would be over its own quota)
quota_out() { btrfs qgroup limit 4k "0/$(btrfs inspect-internal rootid "$R")" "$D"; }
quota_lifted() { btrfs qgroup limit none "0/$(btrfs inspect-internal rootid "$R")" "$D"; }
# shutdown_fs: the file system at $D stops as a failed disk does: every later read, write and
# fsync fails with EIO (ext4's FS_IOC_SHUTDOWN, _IOR('X', 125, __u32), without flushing the
# journal)
shutdown_fs() {
  $KB_PY -c 'import fcntl, os, struct, sys
fcntl.ioctl(os.open(sys.argv[1], os.O_RDONLY), 0x8004587d, struct.pack("I", 2))' "$D"
}
# remount_fs: the disk is back: a new mount of it replays the journal (every fsync'd commit)
remount_fs() { umount "$D"; mount -o loop "$T/ext4.img" "$D"; }
# move_results ext4|btrfs|thin: the campaign's results folder moves to a new file system of
# that kind mounted at $D, on a loop file of 128 MiB in $T: on btrfs the folder is a subvolume
# with quotas on; "thin" is an ext4 whose loop file lies on a tmpfs of 24 MiB ($T/thin), as
# thin-provisioned storage that can run out while the file system has room. Returns 1 when
# this kernel cannot mount it (then $D is as before).
move_results() {
  local kind=$1 img=$T/$1.img
  if [ "$kind" = thin ]; then
    mkdir -p "$T/thin"
    mount -t tmpfs -o size=24m tmpfs "$T/thin"
    img=$T/thin/ext4.img
  fi
  cp -a "$R" "$T/moved"
  truncate -s 128M "$img"
  case $kind in
    btrfs) mkfs.btrfs -q -f "$img" > /dev/null ;;
    *) mke2fs -q -t ext4 -F "$img" ;;
  esac
  mkdir -p "$T/probe"
  if ! mount -o loop "$img" "$T/probe" 2> "$T/mount.$kind.log"; then
    rm -rf "$T/moved" "$img"
    ! mountpoint -q "$T/thin" || umount "$T/thin"
    return 1
  fi
  umount "$T/probe"
  umount "$D"
  mount -o loop "$img" "$D"
  if [ "$kind" = btrfs ]; then
    btrfs quota enable "$D"
    btrfs subvolume create "$R" > /dev/null
    cp -a "$T/moved/." "$R"
  else
    cp -a "$T/moved" "$R"
  fi
  sync -f "$R" # on the disk, as the scheduler had it (its fsyncs were on the old one)
  rm -rf "$T/moved"
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
fill_disk
start_sched
expect_fault "ENOSPC" "No space left on device (errno 28)"
grep -q "$R/[a-z]*\.h5" "$T/sched.log" || fail "the message names no task file"
[ "$(acked)" -eq 0 ] || fail "$(acked) results acknowledged though not written"
rm -f "$D/fill"

note "2. the device fails while the task file is open (EIO: ext4 shut down)"
if move_results ext4; then
  mid_file_fault "EIO" "Input/output error (errno 5)" shutdown_fs remount_fs
else
  skipped+=("EIO: this kernel cannot mount ext4 on a loop device: $(head -1 "$T/mount.ext4.log")")
fi

note "3. the quota runs out while the task file is open (EDQUOT: a btrfs qgroup limit)"
if move_results btrfs; then
  mid_file_fault "EDQUOT" "Disk quota exceeded (errno 122)" quota_out quota_lifted
  note "4. the disk fills up while the task file is open (ENOSPC; btrfs copies on write, so"
  note "   the next flush of the open file needs new space, as a dataset extension does)"
  mid_file_fault "ENOSPC mid-file" "No space left on device (errno 28)" fill_disk unfill_disk
else
  skipped+=("EDQUOT and ENOSPC mid-file: this kernel cannot mount btrfs: $(head -1 "$T/mount.btrfs.log")")
fi
note "5. thin-provisioned storage runs out: the writes succeed, the fsync fails (ENOSPC or EIO)"
thin=0
if move_results thin; then # with the results of a failed write still in the stream
  thin=1
  dd if=/dev/zero of="$T/thin/fill" bs=64k status=none 2>/dev/null || true
  start_sched
  expect_fault "thin storage" "$R/sum.h5: cannot sync: .*(errno \(28\|5\))"
  [ "$(results)" -gt "$(acked)" ] || fail "thin storage: no result left unacknowledged"
  rm "$T/thin/fill"
  umount "$D"                            # what the disk holds, not what the page cache
  mount -o loop "$T/thin/ext4.img" "$D"  # kept of the writes that failed
  $KB_PY "$TESTS_DIR/e2e/check_writer.py" "$T/redis/redis.sock" wf "$R" sum --swmr > /dev/null ||
    fail "thin storage: the task file as the failed fsync left it is not readable"
else
  skipped+=("a failed fsync: this kernel cannot mount ext4 on a loop device: $(head -1 "$T/mount.thin.log")")
fi
start_sched # the rerun records what the faults left in the stream; 6. needs a clean start
wait_caught_up "the rerun after the faults"
# the campaign may have ended meanwhile (its last items done while the scheduler was down): the
# scheduler then exits by itself, 0 (a clean-clone CI run: "kill: No such process" here)
kill -TERM "$SCHED" 2>/dev/null || true
wait_pid "$SCHED" 30 || fail "scheduler failed on SIGTERM: $(tail -3 "$T/sched.log")"

note "6. immutable task files"
chattr +i "$R"/*.h5
before=$(acked)
start_sched
expect_fault "chattr +i" "Operation not permitted (errno 1)"
[ "$(acked)" -eq "$before" ] || fail "results acknowledged though not written"
chattr -i "$R"/*.h5

note "7. a read-only file system (EROFS)"
mount -o remount,ro "$D"
start_sched
expect_fault "EROFS" "$R/sum.h5.*Read-only file system (errno 30)"
[ "$(acked)" -eq "$before" ] || fail "results acknowledged though not written"
mount -o remount,rw "$D"

note "8. summary.json cannot be written at the end"
echo '{}' > "$R/summary.json"
chattr +i "$R/summary.json"
start_sched
expect_fault "summary.json" "$R/summary.json.*(errno 1)"
[ "$(rcli HGET 'kb:{wf}:meta' state)" = done ] || fail "campaign not done after the last fault"
chattr -i "$R/summary.json"
# on disk before the thin storage fails: the remount below replays only what was committed, and
# an uncommitted chattr -i came back as an immutable summary.json (EPERM) whenever the journal's
# 5 s commit had not run yet
sync -f "$R"
if [ $thin -eq 1 ]; then
  note "9. summary.json on thin storage that runs out: its fsync fails"
  dd if=/dev/zero of="$T/thin/fill" bs=64k status=none 2>/dev/null || true
  start_sched
  expect_fault "summary.json, thin storage" "$R/summary.json.*(errno \(28\|5\))"
  rm "$T/thin/fill"
  umount "$D"
  mount -o loop "$T/thin/ext4.img" "$D"
fi
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
counts=$($KB_PY "$TESTS_DIR/e2e/check_writer.py" "$T/redis/redis.sock" wf "$R" sum)
$KB_PY -c 'import json, sys
c = json.loads(sys.argv[1]); f = c["files"]["sum"]
sys.exit(0 if c["pending"] == 0 and f["rows"] == f["acked"] > 0 else 1)' "$counts" ||
  fail "not every result once in sum.h5: $counts"
note "sum.h5: $counts"
$KB_PY "$TESTS_DIR/e2e/check_results.py" "$R" --campaign wf --tasks sum \
  --min-evaluations 2 --done $((done_n + dead))
for f in "$R/sum.h5"; do
  h5dump "$f" > /dev/null || fail "h5dump cannot read $f"
done
[ "$(rcli XPENDING 'kb:{wf}:results' scheduler | head -1)" -eq 0 ] ||
  fail "results still pending at the end"
[ "$(acked)" -eq "$(results)" ] || fail "$(acked) of $(results) results acknowledged at the end"
if [ ${#skipped[@]} -gt 0 ]; then
  echo "SKIP: every other fault passed; not tested: ${skipped[*]}"
  exit 77
fi
echo "PASS"
