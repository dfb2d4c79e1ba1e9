#!/usr/bin/env bash
# A suspended job (Slurm's scontrol suspend, gang scheduling's time slices, preemption in
# SUSPEND mode: SIGSTOP to every process of the job, SIGCONT at the resume; a frozen cgroup is
# the same to the runner): the runner and its sandbox are stopped for 12 s, four times, each time
# while the sandbox is busy with an evaluation, under tiers whose watchdog is 10 s (each stop
# longer than a whole watchdog; the watchdog itself twice what an honest evaluation here takes
# under ASan beside another test, so that the test needs no machine of its own). The stopped
# time is not counted against the watchdog (runner/watchdog.h): every honest seed is ok, no
# `timeout` row, the campaign done and its ledger exact. Before, the watchdog's deadline was on
# the monotonic clock alone, which goes on while the job is stopped, and each evaluation under
# way at a stop was recorded as `timeout: timed out after N s` at the resume.
# usage: suspend.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"

start_redis
cat > "$T/su.json" <<JSON
{
  "schema": "kernelbrain.campaign/1",
  "id": "su",
  "backend": "host",
  "tasks": ["$REPO_DIR/tasks/host/sum", "$REPO_DIR/tasks/host/matmul"],
  "budget": {"gpu_seconds": 600},
  "lease_seconds": 60,
  "results_dir": "$T/results",
  "ladder": [{"name": "compile"}, {"name": "smoke", "timeout_seconds": 10},
             {"name": "screen", "timeout_seconds": 10}, {"name": "full", "timeout_seconds": 10}]
}
JSON
"$BIN/kb-submit" submit "$T/su.json" > /dev/null
"$BIN/kb-scheduler" --campaign su --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
"$BIN/kb-runner" --campaign su --cache "$T/cache" 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)

# the state letter of process $1 (R running, S sleeping, ...), empty once it is gone
pstate() { sed -n 's/^.*) \(.\) .*$/\1/p' "/proc/$1/stat" 2> /dev/null || true; }

# the sandbox's start and the tasks' preparations (busy too, under longer limits) are not what
# this is about: the evaluations are, from the third smoke on (both tasks prepared by then)
for _ in $(seq 600); do
  [ "$(grep -c 'tier 1 (smoke): ok' "$T/runner.log")" -ge 3 ] && break
  kill -0 $RUNNER 2> /dev/null || fail "runner exited: $(tail -5 "$T/runner.log")"
  sleep 0.1
done
stops=0
for _ in 1 2 3 4; do
  sb=""
  for _ in $(seq 1000); do
    kill -0 $RUNNER 2> /dev/null || break
    sb=$(pgrep -P $RUNNER -x kb-sandbox || true)
    [ -n "$sb" ] && [ "$(pstate "$sb")" = R ] && break
    sb=""
    sleep 0.01
  done
  [ -n "$sb" ] || break
  note "job suspended for 12 s (sandbox $sb busy)"
  kill -STOP $RUNNER "$sb"
  sleep 12
  kill -CONT "$sb" $RUNNER
  stops=$((stops + 1))
done
[ "$stops" -ge 2 ] || fail "the campaign ended before two stops could be made ($stops)"
wait_pid $RUNNER 180 || fail "runner failed: $(tail -5 "$T/runner.log")"
wait_pid $SCHED 60 || fail "scheduler failed: $(tail -5 "$T/sched.log")"

if grep -E '(smoke|screen|full)\): timeout' "$T/runner.log" >&2; then
  fail "an honest seed was recorded as timeout after the job was suspended"
fi
grep -q 'this runner was stopped for' "$T/runner.log" ||
  fail "the runner never said it was stopped ($stops stops)"
[ "$(rcli HGET 'kb:{su}:meta' state)" = done ] || fail "campaign not done"
ledger_exact su
$KB_PY "$TESTS_DIR/e2e/check_results.py" "$T/results/su" --campaign su --tasks sum matmul \
  --min-evaluations 2 --all-ok > /dev/null || fail "results not every seed ok"
echo "PASS ($stops stops)"
