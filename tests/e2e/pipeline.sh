#!/usr/bin/env bash
# The walking skeleton end to end on real components: kb-submit registers the demo tasks in a
# real redis-server, kb-runner (host backend) evaluates them, kb-scheduler writes the HDF5
# files; the files are read back with h5dump and h5py, every message the code emitted is
# validated against the schemas, and the ledger is exact.
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
start_redis
make_campaign pipe

note "a malformed campaign leaves redis untouched"
printf '{"schema": "kernelbrain.campaign/1", "id": "bad",}' > "$T/bad.json"
rc=0; "$BIN/kb-submit" submit "$T/bad.json" 2> "$T/bad.err" || rc=$?
[ $rc -eq 3 ] || fail "bad campaign: exit $rc, want 3"
grep -q "bad.json:1:" "$T/bad.err" || fail "no file:line:col in: $(cat "$T/bad.err")"
[ "$(rcli DBSIZE)" -eq 0 ] || fail "bad submission wrote to redis"

note "submit"
"$BIN/kb-submit" --json submit "$T/pipe.json" > "$T/submit.json"
grep -q '"submitted":true' "$T/submit.json" || fail "submit output: $(cat "$T/submit.json")"
[ "$(rcli HGET 'kb:{pipe}:meta' state)" = running ] || fail "campaign not running"
rc=0; "$BIN/kb-submit" submit "$T/pipe.json" 2> "$T/again.err" || rc=$?
[ $rc -eq 5 ] || fail "second submit: exit $rc, want 5 (exists)"

note "malformed entries and entries of no lease in the results stream are logged, dropped and counted, not fatal"
rcli XADD 'kb:{pipe}:results' '*' item junk result '{"schema": "kernelbrain.result/1",' > /dev/null
ghost=$(printf 'f%.0s' $(seq 64))
rcli XADD 'kb:{pipe}:results' '*' item "$ghost:1" result "{\"schema\":\"kernelbrain.result/1\",\"campaign\":\"pipe\",\"task\":\"sum\",\"candidate\":\"$ghost\",\"tier\":1,\"tier_name\":\"smoke\",\"attempt\":1,\"charge_id\":\"$ghost:1#1\",\"runner\":\"x\",\"backend\":\"host\",\"device\":\"cpu\",\"status\":\"ok\",\"reason\":\"\",\"cost_ms\":0,\"started\":1,\"finished\":2}" > /dev/null

note "run the scheduler and one runner"
"$BIN/kb-scheduler" --campaign pipe --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
"$BIN/kb-runner" --campaign pipe --cache "$T/cache" --name r1 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
wait_pid $SCHED 240 || fail "scheduler failed: $(tail -5 "$T/sched.log")"
wait_pid $RUNNER 30 || fail "runner exit code $?: $(tail -5 "$T/runner.log")"

grep -q "results stream entry .*" "$T/sched.log" || fail "malformed entry not reported"
grep -q "dropped as forged or stray: no lease named" "$T/sched.log" ||
  fail "entry of no lease not reported: $(grep -i warn "$T/sched.log")"

note "state, ledger, status"
[ "$(rcli HGET 'kb:{pipe}:meta' state)" = done ] || fail "campaign not done"
ledger_exact pipe
"$BIN/kb-submit" --json status pipe > "$T/status.json"
grep -q '"state":"done"' "$T/status.json" || fail "status: $(cat "$T/status.json")"
grep -q '"stray":2' "$T/status.json" || fail "status does not count the 2 planted entries: $(cat "$T/status.json")"

note "every message the code emitted matches its schema"
stream_json 'kb:{pipe}:results' result "$T/all.jsonl"
tail -n +3 "$T/all.jsonl" > "$T/results.jsonl"   # the two planted entries first
ledger_jsonl 'kb:{pipe}:ledger:log' "$T/ledger.jsonl"
stream_json 'kb:{pipe}:ledger:log' moves "$T/ledger-moves.jsonl"
[ "$(wc -l < "$T/results.jsonl")" -ge 6 ] || fail "fewer than 6 results"
$KB_PY "$TESTS_DIR/schema/validate.py" --jsonl result "$T/results.jsonl"
$KB_PY "$TESTS_DIR/schema/validate.py" --jsonl ledger-entry "$T/ledger.jsonl"
[ -s "$T/ledger-moves.jsonl" ] || fail "no runner cycle in the ledger's audit stream"
$KB_PY "$TESTS_DIR/schema/validate.py" --jsonl ledger-moves "$T/ledger-moves.jsonl"
for h in $(rcli --raw KEYS 'kb:{pipe}:cand:*'); do
  rcli --raw HGET "$h" json | head -c -1 > "$T/cand.zst"
  # a frame made with its task's dictionary (from a task's 65th candidate on) needs it
  dict=()
  if [ "$(rcli EXISTS "kb:{pipe}:zdict:$(rcli --raw HGET "$h" task)")" = 1 ]; then
    rcli --raw GET "kb:{pipe}:zdict:$(rcli --raw HGET "$h" task)" | head -c -1 > "$T/cand.dict"
    dict=(-D "$T/cand.dict")
  fi
  zstd -q -d -c "${dict[@]}" "$T/cand.zst" > "$T/cand.json"
  $KB_PY "$TESTS_DIR/schema/validate.py" candidate "$T/cand.json"
done

note "HDF5 files read back by h5dump and h5py"
for task in sum matmul; do
  f="$T/results/pipe/$task.h5"
  h5dump -d /evaluations "$f" > "$T/$task.dump" || fail "h5dump cannot read $f"
  grep -q '"ok"' "$T/$task.dump" || fail "h5dump of $f shows no ok evaluation"
done
$KB_PY "$TESTS_DIR/e2e/check_results.py" "$T/results/pipe" --campaign pipe --tasks sum matmul \
  --min-evaluations 6 --baseline-tier 3 --done "$(rcli HGET 'kb:{pipe}:meta' done)"
echo "PASS"
