#!/usr/bin/env bash
# Keyless OpenAI-compatible endpoints ("auth": "none", docs/generators.md) end to end: a host
# campaign (task sum, the llm generator only) run by kb-launch --local against (1) the project's
# fake server (tests/fixtures/fake_llm.py), which logs the key each request carried, and (2)
# mock-llm (npm @dwmkerr/mock-llm, a server the project did not write; scripts/install-mock-llm.sh
# puts it in the build folder), configured to answer with a real kernel and to refuse with 401
# any request that carries an Authorization header. Checks: validate accepts the campaign with
# no key_env/key_file and refuses one that has both "auth": "none" and a key; no request carried
# a key; each campaign ends with an llm candidate that passed the full tier.
# usage: campaign_keyless.sh BIN_DIR [MOCK_LLM_MAIN_JS]
BIN=$1
MOCK=${2:-}
source "$(dirname "$0")/../lib/common.sh"
FAKE=$TESTS_DIR/fixtures/fake_llm.py
KERNEL=$TESTS_DIR/fixtures/llm/sum/a_unroll4.c

# task sum at a small size, one input set and the baseline seed only: this test is about the
# endpoint, not timing (each evaluation of the 4M-element sum costs a second here)
mkdir -p "$T/tasks" && cp -r "$REPO_DIR/tasks/host/sum" "$T/tasks/sum"
$KB_PY - "$T/tasks/sum/task.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["inputs"][0]["shape"] = [65536]
t["input_sets"] = t["input_sets"][:1]
t["seeds"] = [s for s in t["seeds"] if s["name"] == t["baseline"]]
json.dump(t, open(sys.argv[1], "w"), indent=1)
PY

# keyless_campaign ID ENDPOINT: a campaign file $T/ID.json for task sum, llm only, no key
keyless_campaign() {
  cat > "$T/$1.json" <<JSON
{
  "schema": "kernelbrain.campaign/1",
  "id": "$1",
  "backend": "host",
  "tasks": ["$T/tasks/sum"],
  "budget": {"gpu_seconds": 600, "llm_tokens": 200000},
  "lease_seconds": 5,
  "results_dir": "$T/results",
  "ladder": [{"name": "compile"},
             {"name": "full", "min_samples": 3, "max_samples": 5, "max_seconds": 0.1,
              "noise": 0.5}],
  "generators": {"low_water": 1, "max_per_task": 2,
    "llm": {"api": "openai", "model": "local-coder", "endpoint": "$2", "auth": "none",
            "concurrency": 1, "backoff_seconds": 0.1, "backoff_max_seconds": 0.5,
            "timeout_seconds": 10, "max_retries": 1}}
}
JSON
}

# llm_passed ID: an llm candidate of task sum passed the full tier (HDF5, h5py)
llm_passed() {
  $KB_PY - "$T/results/$1/sum.h5" <<'PY'
import sys, h5py
s = lambda b: b.decode() if isinstance(b, bytes) else str(b)
with h5py.File(sys.argv[1], "r") as f:
    cands = {s(r["id"]): s(r["generator"]) for r in f["candidates"][:]}
    ev = f["evaluations"][:]
    ok = {s(e["candidate"]) for e in ev if s(e["status"]) == "ok" and s(e["tier_name"]) == "full"}
    llm = [c for c, g in cands.items() if g == "llm"]
    assert llm, "no llm candidate: %s" % cands
    assert any(c in ok for c in llm), "no llm candidate passed the full tier"
    print("%d llm candidates, %d passed full" % (len(llm), sum(c in ok for c in llm)), file=sys.stderr)
PY
}

note "validate: no key_env or key_file with \"auth\": \"none\"; a key beside it is refused"
keyless_campaign kl-fake "http://127.0.0.1:1/v1/chat/completions"
"$BIN/kb-submit" validate "$T/kl-fake.json" > /dev/null || fail "a keyless campaign is refused"
$KB_PY "$TESTS_DIR/schema/validate.py" campaign "$T/kl-fake.json" || fail "keyless campaign fails its schema"
sed 's/"auth": "none"/"auth": "none", "key_env": "X"/' "$T/kl-fake.json" > "$T/both.json"
rc=0; "$BIN/kb-submit" validate "$T/both.json" 2> "$T/both.err" || rc=$?
[ $rc -eq 3 ] && grep -q '"auth": "none": it takes no "key_env" or "key_file"' "$T/both.err" ||
  fail "auth none with a key: exit $rc: $(cat "$T/both.err")"

note "the fake server: no request carries a key"
$KB_PY "$FAKE" --port-file "$T/llm.port" --log "$T/llm.jsonl" 2> "$T/fake.log" &
BG_PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/llm.port" ] && break; sleep 0.1; done
PORT=$(cat "$T/llm.port") || fail "fake llm server did not start: $(cat "$T/fake.log")"
keyless_campaign kl-fake "http://127.0.0.1:$PORT/v1/chat/completions"
"$BIN/kb-launch" --local "$T/kl-fake.json" > "$T/fake-run.txt" 2>&1 ||
  fail "campaign against the fake failed: $(tail -5 "$T/fake-run.txt")"
$KB_PY -c '
import json, sys
log = [json.loads(l) for l in open(sys.argv[1])]
assert log, "no request reached the fake"
assert all(e["auth"] is None for e in log), "a request carried a key"
print("fake: %d requests, none with a key" % len(log), file=sys.stderr)' "$T/llm.jsonl" ||
  fail "requests to the fake"
llm_passed kl-fake || fail "fake: no llm kernel passed"

if [ -z "$MOCK" ] || [ ! -f "$MOCK" ]; then
  echo "SKIP: mock-llm is not installed (scripts/install-mock-llm.sh BUILD/npm)" >&2
  exit 77
fi
note "mock-llm (npm @dwmkerr/mock-llm): a kernel answered, 401 for any Authorization header"
$KB_PY - "$KERNEL" "$T/mock-llm.yaml" <<'PY'
import json, sys
src = open(sys.argv[1]).read()
ok = {"id": "chatcmpl-kb", "object": "chat.completion", "model": "local-coder",
      "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
                   "content": "Here is a faster kernel.\n\n```c\n" + src + "```\n"}}],
      "usage": {"prompt_tokens": 900, "completion_tokens": 300, "total_tokens": 1200}}
denied = {"error": {"message": "this endpoint takes no key", "type": "invalid_request_error",
                    "code": "invalid_api_key"}}
with open(sys.argv[2], "w") as f:  # rules: the last match wins
    f.write("rules:\n")
    for match, status, body in (("'@'", 200, ok), ("headers.authorization", 401, denied)):
        f.write('  - path: "/v1/chat/completions"\n    method: "POST"\n    match: %s\n'
                "    response:\n      status: %d\n      content: %s\n"
                % (match, status, json.dumps(json.dumps(body))))
PY
MPORT=$($KB_PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
HOST=127.0.0.1 PORT=$MPORT node "$MOCK" --config "$T/mock-llm.yaml" > "$T/mock.log" 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$MPORT/health" > /dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$MPORT/health" > /dev/null || fail "mock-llm did not start: $(cat "$T/mock.log")"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer x' -H 'Content-Type: application/json' \
  -d '{"model": "m", "messages": [{"role": "user", "content": "hi"}]}' "http://127.0.0.1:$MPORT/v1/chat/completions")
[ "$code" = 401 ] || fail "mock-llm answers a keyed request with $code, not 401: the test could not see a key"
keyless_campaign kl-mock "http://127.0.0.1:$MPORT/v1/chat/completions"
"$BIN/kb-launch" --local "$T/kl-mock.json" > "$T/mock-run.txt" 2>&1 ||
  fail "campaign against mock-llm failed: $(tail -5 "$T/mock-run.txt")"
llm_passed kl-mock || fail "mock-llm: no llm kernel passed"
echo "PASS"
