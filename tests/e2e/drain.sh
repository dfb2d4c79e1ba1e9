#!/usr/bin/env bash
# kb-submit drain and cancel mid-run: no new evaluations start, the ones under way are recorded,
# the scheduler ends the campaign and exits 0, the runner leaves with 0, the ledger is exact and
# the HDF5 files hold exactly the items redis counted done.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
for verb in drain cancel; do
  make_campaign "$verb"
  "$BIN/kb-submit" -q submit "$T/$verb.json" > /dev/null
  "$BIN/kb-scheduler" --campaign "$verb" --cache "$T/sched" 2> "$T/$verb.sched.log" &
  SCHED=$!; BG_PIDS+=($SCHED)
  "$BIN/kb-runner" --campaign "$verb" --cache "$T/cache" 2> "$T/$verb.runner.log" &
  RUNNER=$!; BG_PIDS+=($RUNNER)
  # mid-run: 3 results in and at least 2 items open, read while the runner is held still
  # (SIGSTOP, its compile threads too) and kept so while the command lands, so that a fast runner
  # cannot finish the campaign in between (it holds at most one item under evaluation; what it
  # claimed ahead is released, so something stays undone). Read before the stop, the count could
  # fall between the read and the stop: under ASan a compile-tier item completes in that window.
  for _ in $(seq 600); do
    kill -STOP $RUNNER
    [ "$(rcli XLEN "kb:{$verb}:results")" -ge 3 ] && [ "$(rcli HGET "kb:{$verb}:meta" open)" -ge 2 ] &&
      break
    kill -CONT $RUNNER
    sleep 0.05
  done
  "$BIN/kb-submit" "$verb" "$verb" | grep -q "campaign \"$verb\"" || fail "$verb printed nothing"
  kill -CONT $RUNNER
  wait_pid $SCHED 120 || fail "scheduler failed after $verb: $(tail -3 "$T/$verb.sched.log")"
  wait_pid $RUNNER 60 || fail "runner failed after $verb: $(tail -3 "$T/$verb.runner.log")"
  state=$(rcli HGET "kb:{$verb}:meta" state)
  want=$([ $verb = drain ] && echo done || echo cancelled)
  [ "$state" = "$want" ] || fail "state after $verb: $state, want $want"
  [ "$(rcli ZCARD "kb:{$verb}:lease")" -eq 0 ] || fail "leases left after $verb"
  ledger_exact "$verb"
  done_n=$(rcli HGET "kb:{$verb}:meta" done)
  open_n=$(rcli HGET "kb:{$verb}:meta" open)
  note "$verb: $done_n done, $open_n left undone"
  [ "$open_n" -gt 0 ] || fail "$verb came too late to leave anything undone"
  rows=$($KB_PY -c 'import h5py,sys; print(sum(len(h5py.File(f,"r")["evaluations"]) for f in sys.argv[1:]))' \
    "$T/results/$verb"/*.h5)
  [ "$rows" -eq "$done_n" ] || fail "$verb: $rows rows in the files, $done_n items done"
done
echo "PASS"
