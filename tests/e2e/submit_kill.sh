#!/usr/bin/env bash
# kb-submit killed with kill -9 in the middle of a submission. The campaign is registered first
# (state submitting), then its tasks, seeds and first items are written, then it opens
# (running). Rerun with the same file, a submission killed anywhere is finished: the campaign
# runs with its four seeds enqueued once, and a scheduler and a runner take it to the end whole.
# Rerun with a changed file (a mistake fixed), the half-registered campaign is refused with a
# message saying what to do; before, it said only 'campaign "ID" already exists (state
# submitting)', a state nothing else leaves. Then `kb-submit cancel` cancels it.
# usage: submit_kill.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
# How long a whole submission takes here (about 10 ms on this machine; several times that under
# ASan beside a build): the kills are drawn within it, so that they land at every step of it
# (with a fixed 0-15 ms the ASan run beside a build killed all 150 before it registered).
make_campaign skt '"ladder": [{"name": "compile"}, {"name": "smoke"}]'
t0=$(date +%s%N)
"$BIN/kb-submit" -q submit "$T/skt.json" > /dev/null || fail "a plain submission failed"
WINDOW_MS=$((($(date +%s%N) - t0) / 1000000 + 2))
[ "$WINDOW_MS" -ge 15 ] || WINDOW_MS=15
note "a whole submission took about $((WINDOW_MS - 2)) ms: kills drawn from 0-$WINDOW_MS ms"
submit_killed() { # ID: kb-submit of ID killed with -9 after a random 0-WINDOW_MS ms
  make_campaign "$1" '"ladder": [{"name": "compile"}, {"name": "smoke"}]'
  "$BIN/kb-submit" -q submit "$T/$1.json" > /dev/null 2>&1 &
  local pid=$!
  local ms=$((RANDOM % (WINDOW_MS + 1)))
  sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  kill -9 "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
}

note "killed anywhere, rerun with the same file"
# at least 12 kills, until one left a submission half way for the last part and another, half
# way too, was finished by its rerun
half="" resumed=0
for k in $(seq 150); do
  [ "$k" -gt 12 ] && [ -n "$half" ] && [ "$resumed" -ge 1 ] && break
  submit_killed "sk$k"
  st=$(rcli HGET "kb:{sk$k}:meta" state)
  [ "$st" = submitting ] && [ -z "$half" ] && { half=sk$k; continue; } # kept for the last part
  rc=0
  out=$("$BIN/kb-submit" -q submit "$T/sk$k.json" 2>&1) || rc=$?
  case "$rc:$st" in
    0:* | 5:running) ;;
    *) fail "sk$k (state '$st' after the kill): rerun exit $rc: $out" ;;
  esac
  [ "$(rcli HGET "kb:{sk$k}:meta" state)" = running ] || fail "sk$k not running after the rerun"
  [ "$(rcli HGET "kb:{sk$k}:meta" open)" -eq 4 ] ||
    fail "sk$k: $(rcli HGET "kb:{sk$k}:meta" open) items open, not the 4 seeds"
  [ "$st" = submitting ] && resumed=$((resumed + 1)) && full=sk$k
  [ -z "${full:-}" ] && full=sk$k
  echo "kill $k: state '${st:-none}' after the kill; rerun exit $rc" >&2
done
[ -n "$half" ] && [ "$resumed" -ge 1 ] ||
  fail "in $k kills, none left a submission half way twice (half: '$half', resumed: $resumed)"

note "$full, finished by its rerun, to the end"
"$BIN/kb-scheduler" --campaign "$full" --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
"$BIN/kb-runner" --campaign "$full" --cache "$T/cache" 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
wait_pid "$SCHED" 120 || fail "scheduler failed: $(tail -3 "$T/sched.log")"
wait_pid "$RUNNER" 30 || fail "runner failed: $(tail -3 "$T/runner.log")"
campaign_whole "$full" "$T/results/$full" sum matmul

note "$half half registered, rerun with a changed file"
sed -i 's/"gpu_seconds": 600/"gpu_seconds": 700/' "$T/$half.json"
rc=0
out=$("$BIN/kb-submit" -q submit "$T/$half.json" 2>&1) || rc=$?
[ "$rc" -eq 5 ] || fail "changed file: exit $rc, not 5: $out"
echo "$out" | grep -q "^kb-submit: campaign \"$half\" has an interrupted submission of another campaign file (sha256 [0-9a-f]*\.\.\., this one [0-9a-f]*\.\.\.): submit that file again to finish it, or cancel it (kb-submit cancel $half)" ||
  fail "changed file: $out"
"$BIN/kb-submit" -q cancel "$half" || fail "cancel of the half registered campaign"
[ "$(rcli HGET "kb:{$half}:meta" state)" = cancelled ] || fail "$half not cancelled"
echo "PASS"
