#!/usr/bin/env bash
# One scheduler per campaign. Each results entry goes to one reader of the consumer group, so a
# second kb-scheduler must be refused before it reads anything. Before, two started at once
# both read the stream; the second stopped only when it met the first's task file lock
# ("already open for writing by another store"), leaving the entries it had read pending: the
# campaign ended "done" with a result in Redis that no file holds. With another --results
# folder it was not stopped at all, and results were split over two sets of files.
#   1. two kb-schedulers started at once: one exits 5 naming the holder of the scheduler lock
#      (kb:{tw}:scheduler) once it did not expire (12 s), having read nothing;
#   2. a third with another --results folder meanwhile: exit 5, no file made there;
#   3. kill -9 of the holder, restarted at once: the lock is taken over from the dead process
#      (same host) without waiting for it to expire;
#   4. an entry read by another reader of the group and never acknowledged (redis-cli
#      XREADGROUP): recorded all the same before the campaign ends;
#   then the campaign ends whole (campaign_whole: every result once, nothing pending).
# usage: two_schedulers.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
make_campaign tw
"$BIN/kb-submit" -q submit "$T/tw.json" > /dev/null
sched() { # LOG [ARGS...]: a kb-scheduler in the background, its pid in $!
  local log=$1
  shift
  "$BIN/kb-scheduler" --campaign tw --cache "$T/sched" "$@" 2> "$T/$log" &
}
results() { rcli XLEN 'kb:{tw}:results'; }
refused() { # PID LOG: exit 5 with the one line naming the lock's holder
  local rc=0
  wait_pid "$1" 10 || rc=$?
  [ "$rc" -eq 5 ] || fail "$2: exit $rc, not 5: $(tail -2 "$T/$2")"
  tail -1 "$T/$2" | grep -q '^kb-scheduler: campaign "tw" has a scheduler already: [0-9a-f]* host=.* pid=[0-9]* since=[0-9]* (kb:{tw}:scheduler' ||
    fail "$2 does not name the holder: $(tail -1 "$T/$2")"
}

note "1. two schedulers at once, 2. a third with another results folder"
sched a.log; A=$!; BG_PIDS+=($A)
sched b.log; B=$!; BG_PIDS+=($B)
"$BIN/kb-runner" --campaign tw --cache "$T/cache" --name r1 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
sleep 0.5
sched c.log --results "$T/other"; C=$!; BG_PIDS+=($C)
# from its first result on, the rest of the work waits for step 4, which needs results arriving:
# the refusals below take 12 s, in which the runner finished the campaign, and no second result
# came (the clean-clone CI, twice)
for _ in $(seq 600); do [ "$(results)" -ge 1 ] && break; sleep 0.05; done
kill -STOP "$RUNNER"
# the holder renews its lock: the others are refused once it did not expire (12 s)
for _ in $(seq 200); do
  alive=0
  for p in $A $B $C; do kill -0 "$p" 2> /dev/null && alive=$((alive + 1)); done
  [ "$alive" -le 1 ] && break
  sleep 0.1
done
if kill -0 "$A" 2> /dev/null; then SCHED=$A LOSER=$B L=b.log; else SCHED=$B LOSER=$A L=a.log; fi
refused "$LOSER" "$L"
refused "$C" c.log
kill -0 "$SCHED" 2> /dev/null || fail "every scheduler stopped"
[ ! -e "$T/other/tw" ] || [ -z "$(ls -A "$T/other/tw")" ] || fail "the refused scheduler made files"
[ "$(results)" -ge 1 ] || fail "no result yet"

note "3. kill -9 of the holder, restarted at once"
kill -9 "$SCHED"; wait "$SCHED" 2> /dev/null || true
t0=$(date +%s.%N)
sched d.log; SCHED=$!; BG_PIDS+=($SCHED)
for _ in $(seq 100); do grep -q 'scheduler lock: taken over' "$T/d.log" && break; sleep 0.05; done
grep -q 'scheduler lock: taken over from a scheduler that is gone' "$T/d.log" ||
  fail "the restart did not take the lock over: $(tail -2 "$T/d.log")"
took=$($KB_PY -c "import sys, time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$t0")
note "lock taken over after ${took} s"

note "4. an entry read by another reader and never acknowledged"
# the scheduler stopped (SIGSTOP) while results arrive: Redis still answers its blocked read
# with the first, the other reader takes the next
kill -STOP "$SCHED"
before=$(results)
kill -CONT "$RUNNER"
for _ in $(seq 600); do [ "$(results)" -gt $((before + 1)) ] && break; sleep 0.05; done
taken=$(rcli XREADGROUP GROUP scheduler main COUNT 1 STREAMS 'kb:{tw}:results' '>' | head -3)
kill -CONT "$SCHED"
[ -n "$taken" ] || fail "the other reader got no entry"

wait_pid "$SCHED" 300 || fail "scheduler failed: $(tail -5 "$T/d.log")"
wait_pid "$RUNNER" 30 || fail "runner failed: $(tail -5 "$T/runner.log")"
grep -q 'read but not recorded by another scheduler; recording' "$T/d.log" ||
  fail "the pending entry was not said: $(tail -3 "$T/d.log")"
campaign_whole tw "$T/results/tw" sum matmul
[ -z "$(rcli GET 'kb:{tw}:scheduler')" ] || fail "the lock outlived its scheduler"
echo "PASS"
