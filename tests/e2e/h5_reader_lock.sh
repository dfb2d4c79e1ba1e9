#!/usr/bin/env bash
# A task file held open by a reader while the scheduler restarts, as a user's notebook holds one:
# 1. the scheduler stopped (SIGTERM: the file closed cleanly), then h5py.File(path) without SWMR
#    (it takes HDF5's shared file lock), then a new scheduler: it opens the file for writing and
#    goes on; nothing is set aside or rebuilt. Before, its open failed on the lock ("unable to
#    lock file, errno = 11"), h5clear failed the same way, and the healthy file was renamed
#    "<path>.corrupt-<time>" and rebuilt from redis (the reader kept the old copy).
# 2. the scheduler killed (-9: the file's SWMR status flags left set), a SWMR reader holding the
#    other file, a new scheduler: h5clear and the open go through, nothing set aside.
# The campaign then ends whole: every result once in the files.
# usage: h5_reader_lock.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
make_campaign rl '"ladder": [{"name": "compile"}, {"name": "smoke"},
             {"name": "screen", "max_seconds": 0.2},
             {"name": "full", "min_samples": 10, "max_seconds": 0.3}]'
"$BIN/kb-submit" -q submit "$T/rl.json" > /dev/null
R=$T/results/rl
start_sched() {
  "$BIN/kb-scheduler" --campaign rl --cache "$T/sched" 2>> "$T/sched.log" &
  SCHED=$!; BG_PIDS+=($SCHED)
}
results() { rcli XLEN 'kb:{rl}:results'; }
wait_files() { # wait_files N: both files made and at least N results posted
  for _ in $(seq 600); do
    [ -e "$R/sum.h5" ] && [ -e "$R/matmul.h5" ] && [ "$(results)" -ge "$1" ] && return 0
    sleep 0.05
  done
  fail "no files or fewer than $1 results after 30 s"
}
hold() { # hold FILE [--swmr]: a reader holding FILE open, in the background (pid in HOLDER)
  $KB_PY "$TESTS_DIR/e2e/h5_reader_lock.py" "$@" > "$T/holder.out" 2> "$T/holder.log" &
  HOLDER=$!; BG_PIDS+=($HOLDER)
  for _ in $(seq 200); do grep -qx open "$T/holder.out" && return 0; sleep 0.05; done
  fail "the reader could not open $1: $(cat "$T/holder.log")"
}
start_sched
"$BIN/kb-runner" --campaign rl --cache "$T/cache" 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
wait_files 4

note "1. scheduler stopped; sum.h5 held open by h5py.File(path) (no SWMR); scheduler restarted"
kill -TERM "$SCHED"
wait_pid "$SCHED" 30 || fail "the scheduler did not stop cleanly"
hold "$R/sum.h5"
before=$(results)
mark=$(wc -l < "$T/sched.log")
start_sched
for _ in $(seq 600); do
  [ "$(tail -n "+$((mark + 1))" "$T/sched.log" | grep -c 'sum/.* tier ')" -ge 2 ] && break
  sleep 0.05
done
tail -n "+$((mark + 1))" "$T/sched.log" | grep 'sum/.* tier ' > /dev/null ||
  fail "the restarted scheduler wrote no result of sum: $(tail -3 "$T/sched.log")"
kill -0 "$HOLDER" || fail "the reader ended"
kill "$HOLDER"; wait "$HOLDER" 2> /dev/null || true

note "2. scheduler killed; matmul.h5 held by a SWMR reader; scheduler restarted"
wait_files $((before + 2))
kill -9 "$SCHED"; wait "$SCHED" 2> /dev/null || true
hold "$R/matmul.h5" --swmr
start_sched
wait_pid "$SCHED" 120 || fail "scheduler failed: $(tail -5 "$T/sched.log")"
wait_pid "$RUNNER" 60 || fail "runner failed"
kill "$HOLDER"; wait "$HOLDER" 2> /dev/null || true

! grep 'rebuilding it from' "$T/sched.log" > /dev/null ||
  fail "a file held open by a reader was taken for damaged: $(grep 'rebuilding it' "$T/sched.log")"
! ls "$R" | grep 'corrupt' > /dev/null || fail "a file was set aside: $(ls "$R")"
campaign_whole rl "$R" sum matmul > /dev/null
echo "PASS"
