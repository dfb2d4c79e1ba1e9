#!/usr/bin/env bash
# kb-launch --local end to end, as `make demo` runs it: its own redis-server, the scheduler and a
# runner; the leaderboard and the HDF5 paths at the end; h5dump reads the files it names. Then
# Ctrl-C mid-run stops everything with exit 130, and the same command resumes to the end; a
# terminal that hangs up (SIGHUP to the whole process group) stops it the same way (exit 130,
# nothing left running; its resume is the Ctrl-C case's).
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
unset KB_REDIS
make_campaign launch

note "a whole campaign, watched from its campaign file (no KB_REDIS: the address kb-launch wrote)"
"$BIN/kb-launch" --local "$T/launch.json" > "$T/out.txt" 2> "$T/err.txt" &
L=$!; BG_PIDS+=($L)
for _ in $(seq 200); do
  grep -q "^KB_REDIS=unix:" "$T/out.txt" 2>/dev/null && break; sleep 0.05
done
grep -q "^KB_REDIS=unix:.*redis.sock$" "$T/out.txt" || fail "no KB_REDIS line: $(cat "$T/out.txt")"
grep -qx "$(grep '^KB_REDIS=' "$T/out.txt")" "$T/results/launch/redis.env" ||
  fail "redis.env does not hold the printed line: $(cat "$T/results/launch/redis.env")"
"$BIN/kb-submit" --json watch "$T/launch.json" -i 0.5 > "$T/watch.jsonl" 2> "$T/watch.err" &
W=$!; BG_PIDS+=($W)
wait_pid $L 120 || fail "kb-launch failed: $(tail -5 "$T/err.txt")"
wait_pid $W 20 || fail "watch did not exit 0 at the end: $? $(tail -3 "$T/watch.err")"
tail -1 "$T/watch.jsonl" | grep -q '"ended":true\|"state":"done"' ||
  grep -q "campaign launch done: .*Redis has gone" "$T/watch.jsonl" ||
  fail "watch's last output is not the ended campaign: $(tail -1 "$T/watch.jsonl")"
# (the client's reconnect warning when Redis goes away is all it may say on stderr)
! grep -v "reconnecting" "$T/watch.err" || fail "watch wrote to stderr: $(cat "$T/watch.err")"
cp "$T/watch.jsonl" "$T/results/launch/watch.jsonl"
# After the end kb-launch has stopped its Redis: status says so from summary.json, exit 0.
rc=0; "$BIN/kb-submit" status "$T/launch.json" > "$T/status.txt" 2>&1 || rc=$?
[ $rc -eq 0 ] && grep -q "campaign launch done: every candidate evaluated (Redis has gone" \
  "$T/status.txt" || fail "status after the end: exit $rc: $(cat "$T/status.txt")"
cat "$T/out.txt" >&2
grep -q "campaign launch: done" "$T/out.txt" || fail "no final state line"
grep -Eq "^  1 +(unrolled|naive) " "$T/out.txt" || fail "no leaderboard for sum"
files=$(grep -E '^  /.*\.h5$' "$T/out.txt")
[ "$(echo "$files" | wc -l)" -eq 2 ] || fail "expected 2 HDF5 paths, got: $files"
for f in $files; do
  rows=$(h5dump -d /evaluations "$f" | grep -c '"ok"' || true)
  [ "$rows" -ge 2 ] || fail "$f: h5dump shows $rows ok evaluations, want at least 2"
done
[ ! -e "$T/results/launch/redis/redis.sock" ] || fail "redis socket left behind"
pgrep -f "$T/results/launch/redis" > /dev/null && fail "processes left running"

note "the same command again: the campaign is resumed from the AOF, already done"
"$BIN/kb-launch" --local "$T/launch.json" > "$T/again.txt" 2>&1 || fail "rerun failed"
grep -q "resuming campaign" "$T/again.txt" || fail "rerun did not resume: $(cat "$T/again.txt")"
grep -q "campaign launch: done" "$T/again.txt" || fail "rerun printed no leaderboard"

note "Ctrl-C mid-run, then resume"
"$BIN/kb-launch" --local --restart "$T/launch.json" > "$T/int.txt" 2>&1 &
L=$!; BG_PIDS+=($L)
for _ in $(seq 200); do
  grep -q "started kb-scheduler" "$T/int.txt" 2>/dev/null && break; sleep 0.05
done
sleep 1.5
kill -INT $L
rc=0; wait_pid $L 60 || rc=$?
[ $rc -eq 130 ] || fail "interrupted kb-launch exit $rc, want 130: $(cat "$T/int.txt")"
pgrep -f "$T/results/launch/redis" > /dev/null && fail "processes left running after Ctrl-C"
"$BIN/kb-launch" --local --json "$T/launch.json" > "$T/resume.json" 2> "$T/resume.err" ||
  fail "resume failed: $(tail -5 "$T/resume.err")"
grep -q '"state": "done"' "$T/resume.json" || fail "resumed campaign did not finish"
$KB_PY "$TESTS_DIR/e2e/check_results.py" "$T/results/launch" --campaign launch \
  --tasks sum matmul --min-evaluations 6 --baseline-tier 3 --all-ok

note "the terminal hung up (SIGHUP to kb-launch's whole process group)"
setsid "$BIN/kb-launch" --local --restart "$T/launch.json" > "$T/hup.txt" 2>&1 &
L=$!; BG_PIDS+=($L) # setsid execs in place: $L leads its own session and process group
for _ in $(seq 200); do
  grep -q "started kb-scheduler" "$T/hup.txt" 2>/dev/null && break; sleep 0.05
done
sleep 1.5
kill -HUP -- "-$L"
rc=0; wait_pid $L 60 || rc=$?
[ $rc -eq 130 ] || fail "hung-up kb-launch exit $rc, want 130 (stopped cleanly): $(cat "$T/hup.txt")"
pgrep -f "$T/results/launch/" > /dev/null && fail "processes left running after SIGHUP"
grep -q "interrupted" "$T/hup.txt" || fail "kb-launch did not say it was interrupted: $(cat "$T/hup.txt")"

note "--gpus: checked before anything starts"
expect_exit() { # WANT PATTERN ARGS...: kb-launch exits WANT and says PATTERN on stderr
  local want=$1 pattern=$2 rc=0; shift 2
  "$BIN/kb-launch" "$@" > /dev/null 2> "$T/gpus.err" || rc=$?
  [ $rc -eq "$want" ] || fail "kb-launch $* exit $rc, want $want: $(cat "$T/gpus.err")"
  grep -q -- "$pattern" "$T/gpus.err" || fail "kb-launch $*: no \"$pattern\" in: $(cat "$T/gpus.err")"
}
expect_exit 2 '"1-0" is not a GPU ordinal' --local --gpus 0,1-0 "$T/launch.json"
expect_exit 2 'GPU 1 is listed twice' --local --gpus 0-2,1 "$T/launch.json"
expect_exit 2 'not both' --local --gpus 0 --runners 2 "$T/launch.json"
expect_exit 2 '--gpus goes with --local' --slurm --gpus 0 "$T/launch.json"
expect_exit 2 'uses the host backend; --gpus goes with cuda campaigns' \
  --local --gpus 0 "$T/launch.json"
[ ! -e "$T/results/launch/redis/redis.sock" ] || fail "a refused --gpus started redis"

if "$BIN/kb-runner" --list-devices --json | grep -q '"devices":\[\]'; then
  note "a cuda campaign forced onto a GPU that is not there: the runner fails, kb-launch stops"
  cat > "$T/nogpu.json" <<EOF
{"schema": "kernelbrain.campaign/1", "id": "nogpu", "name": "no GPU here", "backend": "cuda",
 "tasks": ["$TESTS_DIR/../tasks/cuda/rowsum_small"], "budget": {"gpu_seconds": 60},
 "results_dir": "$T/results"}
EOF
  rc=0
  timeout 60 "$BIN/kb-launch" --local --gpus 0 "$T/nogpu.json" > /dev/null 2> "$T/nogpu.err" || rc=$?
  [ $rc -eq 1 ] || fail "kb-launch exit $rc, want 1: $(cat "$T/nogpu.err")"
  grep -q "every runner has exited and the campaign is not over; runner 0 exited with status 1" \
    "$T/nogpu.err" || fail "no reason naming the runner: $(cat "$T/nogpu.err")"
  pgrep -f "$T/results/nogpu/redis" > /dev/null && fail "processes left running"
fi
echo "PASS"
