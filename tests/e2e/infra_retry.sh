#!/usr/bin/env bash
# An evaluation the runner fails (infra_error: here an oracle that fails its first call in each
# sandbox, tests/e2e/data/flaky_oracle) is run again, not recorded as the candidate's verdict:
# every candidate ends ok, the files hold no infra_error row, the failed attempt's device time
# is charged and the ledger is exact. An oracle that always fails ends, after max_attempts
# attempts of each item, with one infra_error result per item and a campaign that is done (no
# stall, nothing lost; the compile tier, which needs no oracle, is unaffected).
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
DATA="$REPO_DIR/tests/e2e/data/flaky_oracle"
# the same task with an oracle that always fails
mkdir -p "$T/broken/seeds"
cp "$DATA"/seeds/*.c "$T/broken/seeds/"
sed 's/"id": "flaky_oracle"/"id": "broken_oracle"/' "$DATA/task.json" > "$T/broken/task.json"
printf '#include "kb_kernel.h"\nint kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {\n  (void)in; (void)n_in; (void)out; (void)n_out; (void)stream;\n  return 1;\n}\n' \
  > "$T/broken/oracle.c"

run_campaign() { # ID TASK_DIR MAX_ATTEMPTS
  local id=$1 task=$2 attempts=$3
  cat > "$T/$id.json" <<JSON
{"schema": "kernelbrain.campaign/1", "id": "$id", "backend": "host", "tasks": ["$task"],
 "budget": {"gpu_seconds": 600}, "lease_seconds": 5, "max_attempts": $attempts,
 "results_dir": "$T/results"}
JSON
  "$BIN/kb-submit" -q submit "$T/$id.json" > /dev/null
  "$BIN/kb-scheduler" --campaign "$id" --cache "$T/sched" 2> "$T/$id.sched.log" &
  local sched=$!; BG_PIDS+=($sched)
  "$BIN/kb-runner" --campaign "$id" --cache "$T/cache" 2> "$T/$id.runner.log" &
  local runner=$!; BG_PIDS+=($runner)
  wait_pid $sched 240 || fail "$id: scheduler failed: $(tail -3 "$T/$id.sched.log")"
  wait_pid $runner 60 || fail "$id: runner failed: $(tail -3 "$T/$id.runner.log")"
  [ "$(rcli HGET "kb:{$id}:meta" state)" = done ] || fail "$id: state $(rcli HGET "kb:{$id}:meta" state)"
  [ "$(rcli ZCARD "kb:{$id}:lease")" -eq 0 ] || fail "$id: leases left"
  [ "$(rcli HGET "kb:{$id}:meta" open)" -eq 0 ] || fail "$id: items left open"
  ledger_exact "$id"
}

# statuses FILE: "status count" per line, from the file's /evaluations
statuses() {
  $KB_PY - "$1" <<'PY'
import collections, h5py, sys
ev = h5py.File(sys.argv[1], "r")["evaluations"]
for k, v in sorted(collections.Counter(s.decode() for s in ev["status"]).items()):
    print(k, v)
PY
}

# 1. a transient failure: run again, every verdict the candidate's own
run_campaign flaky "$DATA" 3
retries=$(rcli HGET "kb:{flaky}:meta" infra_retries)
[ "${retries:-0}" -ge 1 ] || fail "flaky: no retry counted (meta infra_retries '$retries')"
grep -q "infra_error at attempt 1 .*queued again for another attempt" "$T/flaky.runner.log" ||
  fail "flaky: the runner did not say it queued the item again: $(grep infra "$T/flaky.runner.log" | head -3)"
st=$(statuses "$T/results/flaky/flaky_oracle.h5")
note "flaky: $retries retries; statuses: $(echo $st)"
echo "$st" | grep -q infra_error && fail "flaky: an infra_error was recorded: $st"
done_n=$(rcli HGET "kb:{flaky}:meta" done)
ok_n=$(echo "$st" | awk '$1 == "ok" { print $2 }')
[ "${ok_n:-0}" -eq "$done_n" ] || fail "flaky: $ok_n ok rows of $done_n items done"
"$BIN/kb-submit" status "$T/flaky.json" | grep -q "evaluations failed by the runner, run again" ||
  fail "flaky: status does not show the retries"
"$BIN/kb-submit" --json status "$T/flaky.json" | $KB_PY -c \
  'import json,sys; d=json.load(sys.stdin); assert d["infra_retries"] >= 1, d["infra_retries"]' ||
  fail "flaky: status --json has no infra_retries"

# 2. a failure that stays: max_attempts attempts per item, then its infra_error is recorded
run_campaign broken "$T/broken" 2
done_n=$(rcli HGET "kb:{broken}:meta" done)
retries=$(rcli HGET "kb:{broken}:meta" infra_retries)
st=$(statuses "$T/results/broken/broken_oracle.h5")
note "broken: $done_n items done, $retries retries; statuses: $(echo $st)"
# the compile tier needs no oracle (ok); each seed's first evaluation with the oracle fails
# twice, is retried once and ends infra_error; nothing is promoted past it
infra=$(echo "$st" | awk '$1 == "infra_error" { print $2 }')
[ "${infra:-0}" -eq 2 ] || fail "broken: $infra infra_error rows, want one per seed (2): $st"
[ "$retries" -eq "$infra" ] || fail "broken: $retries retries for $infra items (max_attempts 2: one each)"
[ $((done_n - infra)) -eq 2 ] || fail "broken: $done_n items done, want the 2 compiles and 2 failures"
grep -q "infra_error at attempt 2, its last" "$T/broken.runner.log" ||
  fail "broken: the runner did not name the last attempt"
echo "PASS"
