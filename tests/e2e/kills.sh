#!/usr/bin/env bash
# Nothing lost, nothing twice: runners and the scheduler are killed with SIGKILL at random
# moments mid-campaign (runners while they hold a lease). Leases expire, the reaper requeues and
# refunds, a restarted scheduler resumes from redis and the HDF5 files. At the end every item is
# in the files exactly once and the ledger is exact.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
make_campaign kills
"$BIN/kb-submit" -q submit "$T/kills.json" > /dev/null
RUNNER_KILLS=${RUNNER_KILLS:-3}
SCHED_KILLS=${SCHED_KILLS:-4}

n=0
start_runner() {
  n=$((n + 1))
  "$BIN/kb-runner" --campaign kills --cache "$T/cache" --name "r$n" 2>> "$T/runner.log" &
  RUNNER=$!; BG_PIDS+=($RUNNER)
}
start_sched() {
  "$BIN/kb-scheduler" --campaign kills --cache "$T/sched" 2>> "$T/sched.log" &
  SCHED=$!; BG_PIDS+=($SCHED)
}
results() { rcli XLEN 'kb:{kills}:results'; }

start_sched
start_runner
for k in $(seq "$RUNNER_KILLS"); do
  # wait until this runner holds a lease, then a random moment within its evaluation
  for _ in $(seq 300); do [ "$(rcli ZCARD 'kb:{kills}:lease')" -ge 1 ] && break; sleep 0.05; done
  sleep "0.$((RANDOM % 10))"
  held=$(rcli ZCARD 'kb:{kills}:lease')
  kill -9 "$RUNNER"; wait "$RUNNER" 2>/dev/null || true
  note "runner kill $k: runner r$n killed holding $held lease(s) after $(results) results"
  start_runner
done
for k in $(seq "$SCHED_KILLS"); do
  before=$(results)
  for _ in $(seq 600); do [ "$(results)" -gt "$before" ] && break; sleep 0.05; done
  sleep "0.$((RANDOM % 10))"
  kill -9 "$SCHED"; wait "$SCHED" 2>/dev/null || true
  note "scheduler kill $k after $(results) results"
  start_sched
done
wait_pid "$SCHED" 300 || fail "scheduler failed: $(tail -5 "$T/sched.log")"
wait_pid "$RUNNER" 30 || fail "runner failed: $(tail -5 "$T/runner.log")"

[ "$(rcli HGET 'kb:{kills}:meta' state)" = done ] || fail "campaign not done"
ledger_exact kills
requeued=$(grep -c "reaped expired leases" "$T/sched.log" || true)
note "reaper ran $requeued time(s); $(rcli HGET 'kb:{kills}:meta' dead) item(s) dead-lettered"
[ "$requeued" -ge 1 ] || fail "no lease was reaped after $RUNNER_KILLS runner kills"
dead=$(rcli HGET 'kb:{kills}:meta' dead)
done_n=$(rcli HGET 'kb:{kills}:meta' done)
$KB_PY "$TESTS_DIR/e2e/check_results.py" "$T/results/kills" --campaign kills \
  --tasks sum matmul --min-evaluations 6 --baseline-tier 3 --done $((done_n + dead))
for task in sum matmul; do
  h5dump -H "$T/results/kills/$task.h5" > /dev/null || fail "h5dump cannot read $task.h5"
done
echo "PASS"
