#!/usr/bin/env bash
# A whole campaign with the tune and llm generators on the host backend, through the real
# programs: a real redis-server, the fake LLM server (tests/fixtures/fake_llm.py, Anthropic
# Messages API) answering with C kernels from tests/fixtures/llm and injecting a 429 with
# Retry-After, a 500, a truncated answer and an answer without code; kb-submit, kb-scheduler
# (killed with -9 once mid-campaign and restarted), kb-runner. Checks: a group/world-readable
# key file is refused; the campaign ends; HDF5 files hold seed, llm and tune candidates with
# their lineage (check_results.py and h5py); prompts of every kind reached the model, with the
# reference, a diagnosis and a failure to repair; the ledger is exact in both currencies and the
# tokens spent are those the scheduler recorded in its audit streams; the key appears nowhere.
# usage: campaign_llm.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
FAKE=$TESTS_DIR/fixtures/fake_llm.py
KEY=sk-e2e-$RANDOM$RANDOM

start_redis
note "fake llm server"
$KB_PY "$FAKE" --port-file "$T/llm.port" --log "$T/llm.jsonl" --key "$KEY" --retry-after 1 \
  --script "429,ok,500,ok,truncated,ok,nocode" 2> "$T/fake.log" &
BG_PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/llm.port" ] && break; sleep 0.1; done
PORT=$(cat "$T/llm.port") || fail "fake llm server did not start: $(cat "$T/fake.log")"

printf '%s\n' "$KEY" > "$T/llm.key"
chmod 644 "$T/llm.key"
# three cheap tiers: this test is about generators, not timing
make_campaign gen "\"budget\": {\"gpu_seconds\": 600, \"llm_tokens\": 400000},
  \"ladder\": [{\"name\": \"compile\"}, {\"name\": \"smoke\", \"max_seconds\": 0.2},
             {\"name\": \"full\", \"min_samples\": 3, \"max_samples\": 10, \"max_seconds\": 0.3,
              \"noise\": 0.05}],
  \"generators\": {\"low_water\": 1, \"max_per_task\": 8, \"tune\": {\"weight\": 1},
    \"llm\": {\"weight\": 1, \"api\": \"anthropic\", \"model\": \"fake-coder\",
              \"endpoint\": \"http://127.0.0.1:$PORT/v1/messages\", \"key_file\": \"$T/llm.key\",
              \"concurrency\": 2, \"backoff_seconds\": 0.1, \"backoff_max_seconds\": 0.5,
              \"timeout_seconds\": 10}}"
# make_campaign's own budget line comes first; the one above replaces it
sed -i '0,/"budget": {"gpu_seconds": 600},/{/"budget": {"gpu_seconds": 600},/d}' "$T/gen.json"
$KB_PY "$TESTS_DIR/schema/validate.py" campaign "$T/gen.json" || fail "campaign fails its schema"
"$BIN/kb-submit" submit "$T/gen.json" > /dev/null

note "a key file others can read is refused before any request"
rc=0; "$BIN/kb-scheduler" --campaign gen --cache "$T/sched" --wait 5 2> "$T/refused.log" || rc=$?
[ $rc -ne 0 ] || fail "scheduler accepted a 0644 key file"
grep -q 'readable by group or others (mode 0644)' "$T/refused.log" ||
  fail "no clear message: $(cat "$T/refused.log")"
[ ! -s "$T/llm.jsonl" ] || fail "a request was sent with an unsafe key file"
chmod 600 "$T/llm.key"

note "run: scheduler (killed once with -9, then restarted) and one runner"
"$BIN/kb-runner" --campaign gen --cache "$T/cache" --name r1 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
"$BIN/kb-scheduler" --campaign gen --cache "$T/sched" 2> "$T/sched1.log" &
SCHED=$!; BG_PIDS+=($SCHED)
for _ in $(seq 300); do
  grep -q 'new candidate from llm' "$T/sched1.log" && break
  kill -0 $SCHED 2> /dev/null || break
  sleep 0.1
done
grep -q 'new candidate from llm' "$T/sched1.log" || fail "no llm candidate: $(tail -5 "$T/sched1.log")"
kill -9 $SCHED; wait $SCHED 2> /dev/null || true
"$BIN/kb-scheduler" --campaign gen --cache "$T/sched" 2> "$T/sched2.log" &
SCHED=$!; BG_PIDS+=($SCHED)
wait_pid $SCHED 80 || fail "scheduler failed: $(tail -5 "$T/sched2.log")"
wait_pid $RUNNER 30 || fail "runner exit code $?: $(tail -5 "$T/runner.log")"
cat "$T/sched1.log" "$T/sched2.log" > "$T/sched.log"

note "campaign over, ledger exact in both currencies"
[ "$(rcli HGET 'kb:{gen}:meta' state)" = done ] || fail "campaign not done"
ledger_exact gen
total=$(rcli HGET 'kb:{gen}:ledger' llm_tokens:total)
avail=$(rcli HGET 'kb:{gen}:ledger' llm_tokens:available)
held=$(rcli HGET 'kb:{gen}:ledger' llm_tokens:held)
spent=$(rcli HGET 'kb:{gen}:ledger' llm_tokens:spent)
[ "$held" -eq 0 ] || fail "llm tokens still held: $held"
[ $((avail + spent)) -eq "$total" ] || fail "llm ledger: $avail + $spent != $total"
[ "$(rcli HLEN 'kb:{gen}:gen:llm:open')" -eq 0 ] || fail "llm charges left open"
audited=0
for task in sum matmul; do
  for n in $(rcli --raw XRANGE "kb:{gen}:llm:$task" - + | awk 'p == "tokens_in" || p == "tokens_out" { print } { p = $0 }'); do
    audited=$((audited + n))
  done
done
[ "$spent" -eq "$audited" ] || fail "llm tokens spent $spent, audit streams say $audited"
# what the fake billed is printed, not compared: an answer billed without a readable usage (the
# truncated one) is charged its reservation, more than it billed, and one billed while the
# scheduler was killed is never charged (docs/generators.md, "Tokens"); test_gen_llm checks
# both bounds where no kill is involved
billed=$($KB_PY -c 'import json,sys; print(sum(e["billed"] for e in map(json.loads, open(sys.argv[1]))))' "$T/llm.jsonl")
[ "$spent" -gt 0 ] || fail "no llm tokens spent"
echo "llm tokens: spent=$spent audited=$audited billed by the fake=$billed" >&2

note "what the model was asked"
$KB_PY - "$T/llm.jsonl" "$KEY" <<'PY' || fail "prompts"
import json, re, sys
log = [json.loads(l) for l in open(sys.argv[1])]
key = sys.argv[2]
assert all(e["auth"] == key for e in log), "a request without the key"
assert all(e["api"] == "anthropic" and e["model"] == "fake-coder" for e in log)
prompts = [e["prompt"] for e in log if e["prompt"]]
assert all("int kb_forward(const kb_tensor *in" in p for p in prompts), "ABI missing"
assert {e["task"] for e in log} == {"sum", "matmul"}, {e["task"] for e in log}
kinds = {"translate": "Reference source:", "mutate": "Profile of ", "repair": "failed at tier"}
for kind, marker in kinds.items():
    assert any(marker in p for p in prompts), "no %s prompt" % kind
diag = [p for p in prompts if "Profile of " in p]
assert all(re.search(r"(memory|compute|latency|occupancy)-bound: ", p) for p in diag), "diagnosis"
assert all("- median time: " in p for p in diag), "metrics behind the diagnosis"
for b in ("429", "500", "truncated", "nocode"):
    assert any(e["behaviour"] == b for e in log), "behaviour %s not exercised" % b
print("prompts: %d requests; %s" % (len(log), ", ".join(
    "%s %d" % (k, sum(m in p for p in prompts)) for k, m in kinds.items())), file=sys.stderr)
PY
grep -q "retrying in 1.0" "$T/sched.log" || fail "Retry-After: 1 not honoured"
grep -q "failed generation: no code block defines kb_forward" "$T/sched.log" ||
  fail "answer without code not reported"
grep -q -- "$KEY" "$T"/*.log "$T/gen.json" && fail "the key leaked into a log or the campaign"
[ "$(rcli XLEN 'kb:{gen}:llm:sum')" -ge 1 ] && [ "$(rcli XLEN 'kb:{gen}:llm:matmul')" -ge 1 ] ||
  fail "no audit entries"

note "HDF5: every candidate once, lineage of generated ones"
$KB_PY "$TESTS_DIR/e2e/check_results.py" "$T/results/gen" --campaign gen --tasks sum matmul \
  --min-evaluations 6 --done "$(($(rcli HGET 'kb:{gen}:meta' done) + $(rcli HGET 'kb:{gen}:meta' dead)))"
$KB_PY - "$T/results/gen" <<'PY' || fail "hdf5 lineage"
import sys, h5py
s = lambda b: b.decode() if isinstance(b, bytes) else str(b)
tuned = 0
for task in ("sum", "matmul"):
    with h5py.File("%s/%s.h5" % (sys.argv[1], task), "r") as f:
        rows = f["candidates"][:]
        ids = {s(r["id"]) for r in rows}
        gens = {}
        for r in rows:
            g = s(r["generator"])
            gens[g] = gens.get(g, 0) + 1
            if g == "tune":
                assert s(r["knobs"]).startswith("-D"), "tune candidate without knobs"
                assert s(r["parent0"]) in ids, "tune parent not stored"
            if g == "llm" and not s(r["name"]).startswith("llm-translate"):
                assert s(r["parent0"]) in ids, "%s: parent not stored" % s(r["name"])
        assert gens.get("seed") == 2 and gens.get("llm", 0) >= 1, (task, gens)
        print("%s: %s" % (task, gens), file=sys.stderr)
    tuned += gens.get("tune", 0)
# sum's seed "unrolled" has a knob, and so have fixture answers of both tasks
assert tuned >= 1, "no tune candidate"
PY
note "HDF5 /llm: every audit entry once (a kill -9 mid-campaign), the prompts the model got"
$KB_PY "$TESTS_DIR/e2e/check_writer.py" "$T/redis/redis.sock" gen "$T/results/gen" sum matmul \
  --llm-complete > "$T/llm_check.json" || fail "llm audit in the files"
$KB_PY - "$T/results/gen" "$T/llm.jsonl" "$T/llm_check.json" <<'PY' || fail "prompts in hdf5"
import json, sys, h5py
files = json.load(open(sys.argv[3]))["files"]
assert all(files[t]["llm"] >= 1 for t in ("sum", "matmul")), files
texts = []
for task in ("sum", "matmul"):
    with h5py.File("%s/%s.h5" % (sys.argv[1], task), "r") as f:
        text = f["llm/text"][:].tobytes()
        for r in f["llm/requests"][:]:
            o = int(r["prompt_offset"])
            t = text[o:o + int(r["prompt_len"])].decode()
            # stored as "[system]\n<system>\n[user]\n<user>"; the fake joins the two with "\n"
            assert t.startswith("[system]\n") and "\n[user]\n" in t, t[:80]
            texts.append(t[len("[system]\n"):].replace("\n[user]\n", "\n", 1))
        assert f["llm/text"].compression == "gzip", "llm/text is not deflate-compressed"
# every request the fake answered with tokens (billed, so audited: the ledger check above holds
# billed = audited); a request in flight at the kill -9 (a 429 or 500 before its retry, an
# answer that never came back) bills nothing and leaves no audit entry
log = [json.loads(l) for l in open(sys.argv[2])]
sent = [e["prompt"] for e in log if e.get("prompt_tokens") or e.get("completion_tokens")]
missing = [p for p in sent if p and p not in texts]
assert sent, "no billed request in the fake's log"
assert not missing, "%d prompt(s) the model answered are not in /llm/text" % len(missing)
print("hdf5 llm: %s" % {t: v["llm"] for t, v in files.items()}, file=sys.stderr)
PY
grep -q "voided charge\|rebuilt state" "$T/sched2.log" || fail "restart did not rebuild"
note "the fake's per-request header overrides its queue"
code=$($KB_PY - "$PORT" "$KEY" <<'PY'
import sys, urllib.request, urllib.error
req = urllib.request.Request("http://127.0.0.1:%s/v1/messages" % sys.argv[1],
                             data=b'{"model": "m", "messages": []}',
                             headers={"x-api-key": sys.argv[2], "anthropic-version": "2023-06-01",
                                      "X-Fake-Behaviour": "429"})
try:
    urllib.request.urlopen(req, timeout=10)
    print(200)
except urllib.error.HTTPError as e:
    print(e.code, e.headers.get("Retry-After"))
PY
)
[ "$code" = "429 1" ] || fail "X-Fake-Behaviour: 429 gave: $code"
"$BIN/kb-submit" status gen >&2 || true
echo "PASS"
