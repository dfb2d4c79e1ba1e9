#!/usr/bin/env bash
# The LLM audit is written ahead (docs/generators.md, "Audit"): the fake LLM server
# (tests/fixtures/fake_llm.py) holds its answer for a minute, kb-scheduler is killed with -9
# while the request is in flight, and the request's write-ahead record in kb:{cid}:gen:llm:sent
# holds the prompt the model got, the model and the time it was sent, with no audit stream entry
# (no response). The next start turns it into a "lost" audit entry (test_gen_llm covers that).
# usage: llm_audit_kill.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
FAKE=$TESTS_DIR/fixtures/fake_llm.py

start_redis
$KB_PY "$FAKE" --port-file "$T/llm.port" --log "$T/llm.jsonl" --key sk-audit \
  --slow-seconds 60 --script "slow,slow,slow,slow" 2> "$T/fake.log" &
BG_PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/llm.port" ] && break; sleep 0.1; done
PORT=$(cat "$T/llm.port") || fail "fake llm server did not start: $(cat "$T/fake.log")"
printf 'sk-audit\n' > "$T/llm.key"
chmod 600 "$T/llm.key"
make_campaign wa "\"budget\": {\"gpu_seconds\": 600, \"llm_tokens\": 400000},
  \"generators\": {\"low_water\": 50, \"max_per_task\": 4,
    \"llm\": {\"weight\": 1, \"api\": \"anthropic\", \"model\": \"fake-coder\",
              \"endpoint\": \"http://127.0.0.1:$PORT/v1/messages\", \"key_file\": \"$T/llm.key\",
              \"concurrency\": 1, \"timeout_seconds\": 120}}"
# make_campaign's own budget line comes first; the one above replaces it
sed -i '0,/"budget": {"gpu_seconds": 600},/{/"budget": {"gpu_seconds": 600},/d}' "$T/wa.json"
"$BIN/kb-submit" submit "$T/wa.json" > /dev/null

note "scheduler killed with -9 while its request is in flight"
"$BIN/kb-scheduler" --campaign wa --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
# in flight: recorded ahead, and the fake has the request (its socket is open; it logs at the end)
for _ in $(seq 100); do
  [ "$(rcli HLEN 'kb:{wa}:gen:llm:sent')" -ge 1 ] && grep -q 'llm: .* request' "$T/sched.log" && break
  kill -0 $SCHED 2> /dev/null || fail "scheduler exited: $(tail -5 "$T/sched.log")"
  sleep 0.1
done
sleep 0.3
kill -9 $SCHED; wait $SCHED 2> /dev/null || true
[ ! -s "$T/llm.jsonl" ] || fail "the fake answered before the kill"
charge=$(rcli HKEYS 'kb:{wa}:gen:llm:sent' | head -1)
[ -n "$charge" ] || fail "no write-ahead record: the prompt sent is not recorded"
rcli --raw HGET 'kb:{wa}:gen:llm:sent' "$charge" > "$T/record.json"
task=$($KB_PY - "$T/record.json" <<'PY' || fail "write-ahead record"
import json, sys, time
r = json.load(open(sys.argv[1]))
assert r["model"] == "fake-coder", r
assert "Task %s:" % r["task"] in r["prompt"] and "[user]\n" in r["prompt"], r["prompt"][:200]
assert abs(r["sent_ms"] / 1000 - time.time()) < 60, r["sent_ms"]
assert r["kind"] and "response" not in r, r
print(r["task"])
PY
)
[ "$(rcli XLEN "kb:{wa}:llm:$task")" -eq 0 ] || fail "an audit entry with a response for $charge"
echo "PASS"
