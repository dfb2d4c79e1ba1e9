#!/usr/bin/env bash
# The kernel archive across campaigns on the host backend, through the real programs (a real
# redis-server, kb-submit, kb-scheduler, kb-runner, the fake LLM server):
#  0. task sum gets a baseline seed 32 times slower than the others, so which kernels beat it
#     does not depend on the machine's load;
#  1. kb-submit archive add: a kernel for task sum, by hand (never timed); a bad path refused;
#     KernelBench .py solutions imported (format kernelbench) for a pytorch-oracle copy of sum,
#     refused for sum (C oracle) and without a ModelNew class;
#  2. campaign arc1 (archive on, no other generator): the archived kernel is proposed as a
#     candidate and climbs the ladder (its re-verification here); when arc1 ends, each task's
#     verified best kernels (ok at the last tier, faster than the baseline) are added with the
#     device, timing, campaign and tags;
#  3. a corrupt entry is put in the folder;
#  4. campaign arc2 (archive and llm): the corrupt entry is named (file and field) and skipped;
#     the kernels arc1 verified are proposed again (one already known is not), and the llm
#     prompts for sum carry archived examples of its category with their source;
#  5. list --json | import into another folder gives the same entries.
# usage: archive_campaign.sh BIN_DIR
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
FAKE=$TESTS_DIR/fixtures/fake_llm.py
ARCH=$T/archive
mkdir -p "$ARCH"
start_redis
export KB_ARCHIVE=$T/not-this-one # the campaign's path wins over the environment

# Task sum with a baseline 32 times slower than its other seeds, so which kernels beat the
# baseline does not depend on how loaded this machine is (timings here swing by 5x under load).
mkdir -p "$T/tasks"
cp -r "$REPO_DIR/tasks/host/sum" "$T/tasks/sum"
cat > "$T/tasks/sum/seeds/slow.c" <<'C'
/* sum, deliberately slow baseline for the archive test: the naive loop 32 times (volatile
 * reads, so no pass can be dropped). */
#include <stdint.h>

#include "kb_kernel.h"

int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)n_in;
  (void)n_out;
  (void)stream;
  const volatile float *x = in[0].data;
  int64_t n = kb_tensor_numel(&in[0]);
  float acc = 0.0f;
  for (int rep = 0; rep < 32; rep++) {
    acc = 0.0f;
    for (int64_t i = 0; i < n; i++)
      acc += x[i];
  }
  *(float *)out[0].data = acc;
  return 0;
}
C
$KB_PY - "$T/tasks/sum/task.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["seeds"].append({"name": "slow", "source": "seeds/slow.c"})
t["baseline"] = "slow"
json.dump(t, open(sys.argv[1], "w"), indent=2)
PY
campaign() { # ID EXTRA: make_campaign over the sum above and the built-in matmul
  make_campaign "$1" "$2"
  sed -i "s|\"$REPO_DIR/tasks/host/sum\"|\"$T/tasks/sum\"|" "$T/$1.json"
}

note "kb-submit archive add: by hand, never timed"
"$BIN/kb-submit" archive --archive "$ARCH" add --tag "Hand Made" --name four_acc \
  "$T/tasks/sum" "$TESTS_DIR/fixtures/llm/sum/a_unroll4.c" > "$T/add.out"
grep -q "added four_acc for task sum" "$T/add.out" || fail "add: $(cat "$T/add.out")"
rc=0; "$BIN/kb-submit" archive --archive "$T/nope" list 2> "$T/nope.err" || rc=$?
[ $rc -eq 1 ] && grep -q "archive folder \"$T/nope\" does not exist" "$T/nope.err" ||
  fail "missing folder: rc $rc, $(cat "$T/nope.err")"
rc=0; "$BIN/kb-submit" archive list 2> /dev/null || rc=$?
[ $rc -eq 1 ] || fail "KB_ARCHIVE naming no folder: rc $rc"
rc=0; "$BIN/kb-submit" archive --archive "$ARCH" bogus 2> /dev/null || rc=$?
[ $rc -eq 2 ] || fail "unknown archive command: rc $rc"

note "kb-submit archive add/import of KernelBench solutions (.py): pytorch-oracle tasks only"
KBA=$T/archive-kb # its own folder: the campaigns below see only $ARCH
mkdir -p "$KBA"
cp -r "$T/tasks/sum" "$T/tasks/tsum"
printf 'import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x.sum().reshape(1)\ndef get_inputs():\n    return [torch.randn(4194304)]\ndef get_init_inputs():\n    return []\n' \
  > "$T/tasks/tsum/model.py"
$KB_PY -c 'import json, sys; t = json.load(open(sys.argv[1])); t["oracle"] = {"kind": "pytorch", "source": "model.py"}; json.dump(t, open(sys.argv[1], "w"))' \
  "$T/tasks/tsum/task.json"
MN=$TESTS_DIR/fixtures/llm/modelsum
rc=0; "$BIN/kb-submit" archive -a "$KBA" add "$T/tasks/sum" "$MN/a_sum_ext.py" 2> "$T/kb.err" || rc=$?
[ $rc -eq 3 ] && grep -q 'a_sum_ext.py: a KernelBench solution (.py) needs a task with a pytorch oracle' "$T/kb.err" ||
  fail "a .py for a C-oracle task: rc $rc, $(cat "$T/kb.err")"
rc=0; "$BIN/kb-submit" archive -a "$KBA" import "$T/tasks/tsum" "$MN/a_sum_ext.py" "$MN/b_no_modelnew.py" \
  2> "$T/kb.err" || rc=$?
[ $rc -eq 3 ] && grep -q 'b_no_modelnew.py: a KernelBench solution must define `class ModelNew' "$T/kb.err" ||
  fail "a .py without ModelNew: rc $rc, $(cat "$T/kb.err")"
[ -z "$(ls "$KBA")" ] || fail "a refused import wrote $(ls "$KBA")"
"$BIN/kb-submit" archive -a "$KBA" import "$T/tasks/tsum" "$MN/a_sum_ext.py" "$MN/c_sum_ext4.py" \
  "$TESTS_DIR/fixtures/llm/sum/a_unroll4.c" > "$T/kb.out" || fail "import of .py solutions failed"
grep -q "imported 3 entries for task sum" "$T/kb.out" || fail "import: $(cat "$T/kb.out")"
"$BIN/kb-submit" archive -a "$KBA" list --json | $KB_PY -c '
import json, sys
es = {e["name"]: e for e in map(json.loads, sys.stdin)}
assert sorted(es) == ["a_sum_ext", "a_unroll4", "c_sum_ext4"], sorted(es)
for n in ("a_sum_ext", "c_sum_ext4"):
    assert es[n]["format"] == "kernelbench" and "kernelbench" in es[n]["tags"], es[n]
assert "format" not in es["a_unroll4"], es["a_unroll4"]
' || fail "the archive does not keep the formats"
# the llm generator's "format": "kernelbench" is valid over the pytorch-oracle task
# (tests/bad-input/gen-llm-kernelbench-no-torch: refused over a C-oracle one)
cat > "$T/kbllm.json" <<JSON
{"schema": "kernelbrain.campaign/1", "id": "kbllm", "backend": "host",
 "tasks": ["$T/tasks/tsum"], "budget": {"gpu_seconds": 60, "llm_tokens": 1000},
 "generators": {"llm": {"api": "openai", "endpoint": "http://127.0.0.1:1/v1/chat/completions",
                        "model": "m", "key_env": "KB_TEST_KEY", "format": "kernelbench"}}}
JSON
"$BIN/kb-submit" validate "$T/kbllm.json" > /dev/null 2> "$T/kbllm.err" ||
  fail "llm format kernelbench over a pytorch-oracle task refused: $(cat "$T/kbllm.err")"

LADDER='"ladder": [{"name": "compile"}, {"name": "smoke", "max_seconds": 0.2},
             {"name": "full", "min_samples": 3, "max_samples": 10, "max_seconds": 0.3,
              "noise": 0.05}],
  "search": {"eta": 1, "stagnation_evaluations": 0}'

note "a campaign naming a missing archive folder is refused at submission, with the field"
campaign bad "$LADDER, \"generators\": {\"archive\": {\"path\": \"$T/missing\"}}"
rc=0; "$BIN/kb-submit" validate "$T/bad.json" 2> "$T/bad.err" || rc=$?
[ $rc -eq 3 ] && grep -q 'bad.json:[0-9]*:[0-9]*: "generators.archive.path": ".*missing" is not an existing folder' "$T/bad.err" ||
  fail "missing archive folder: rc $rc, $(cat "$T/bad.err")"

run() { # ID: scheduler and one runner to the end
  "$BIN/kb-scheduler" --campaign "$1" --cache "$T/sched" 2> "$T/$1.sched.log" &
  local sched=$!; BG_PIDS+=($sched)
  "$BIN/kb-runner" --campaign "$1" --cache "$T/cache" --name r1 2> "$T/$1.runner.log" &
  local runner=$!; BG_PIDS+=($runner)
  wait_pid $sched 120 || fail "$1: scheduler failed: $(tail -5 "$T/$1.sched.log")"
  wait_pid $runner 30 || fail "$1: runner failed: $(tail -5 "$T/$1.runner.log")"
  [ "$(rcli HGET "kb:{$1}:meta" state)" = done ] || fail "$1 not done"
}

note "arc1: the archived kernel is proposed and evaluated; the best kernels are added"
campaign arc1 "$LADDER,
  \"generators\": {\"low_water\": 1, \"max_per_task\": 4,
                   \"archive\": {\"path\": \"$ARCH\", \"tags\": [\"ci-run\"]}}"
$KB_PY "$TESTS_DIR/schema/validate.py" campaign "$T/arc1.json" || fail "arc1 fails its schema"
"$BIN/kb-submit" -q submit "$T/arc1.json" > /dev/null
run arc1
grep -q "archive: $ARCH: 1 entries" "$T/arc1.sched.log" || fail "archive not opened: $(grep archive "$T/arc1.sched.log")"
grep -q "sum/archive-four_acc (.*): new candidate from archive" "$T/arc1.sched.log" ||
  fail "archived kernel not proposed: $(grep -i archive "$T/arc1.sched.log" | head)"
$KB_PY - "$T/results/arc1/sum.h5" <<'PY' || fail "arc1 hdf5"
import sys, h5py
s = lambda b: b.decode() if isinstance(b, bytes) else str(b)
with h5py.File(sys.argv[1], "r") as f:
    cands = {s(r["id"]): s(r["generator"]) for r in f["candidates"][:]}
    arch = [i for i, g in cands.items() if g == "archive"]
    assert len(arch) == 1, cands
    tiers = {int(r["tier"]) for r in f["evaluations"][:] if s(r["candidate"]) == arch[0]}
    assert tiers == {0, 1, 2}, "archived kernel evaluated at tiers %s" % sorted(tiers)
    print("arc1 sum: candidates %s; the archived one evaluated at tiers %s" % (
        sorted(cands.values()), sorted(tiers)), file=sys.stderr)
PY
"$BIN/kb-submit" archive --archive "$ARCH" list --json > "$T/list1.jsonl"
"$BIN/kb-submit" archive --archive "$ARCH" list >&2
$KB_PY - "$T/list1.jsonl" <<'PY' || fail "entries added by arc1"
import json, sys
es = [json.loads(l) for l in open(sys.argv[1])]
added = [e for e in es if e["campaign"] == "arc1"]
# sum's three other kernels all beat its slow baseline; matmul's depend on the machine's load
assert {e["name"] for e in added if e["task"] == "sum"} == {"naive", "unrolled", "four_acc"}, \
    [(e["task"], e["name"], e["speedup"]) for e in added]
for e in added:
    assert e["gpu"] not in ("", "unknown") and e["tier"] == "full", e  # the runner's device
    assert e["speedup"] > 1 and e["median_us"] > 0 and e["baseline_us"] > e["median_us"], e
    assert e["name"] not in ("slow",) and not (e["task"] == "matmul" and e["name"] == "naive"), \
        "a baseline itself was added"
    assert "ci-run" in e["tags"] and e["category"] in e["tags"], e["tags"]
# the hand-made kernel, once verified, keeps its name, maker and tags
re = [e for e in added if e["name"] == "four_acc"]
assert re[0]["generator"] == "manual" and "hand-made" in re[0]["tags"], re[0]
assert "archive" not in re[0]["tags"], re[0]["tags"]
print("arc1 added: %s" % ", ".join("%s/%s %.2fx" % (e["task"], e["name"], e["speedup"])
                                   for e in added), file=sys.stderr)
PY
id=$(head -1 "$T/list1.jsonl" | $KB_PY -c 'import json,sys; print(json.load(sys.stdin)["id"])')
"$BIN/kb-submit" archive --archive "$ARCH" show "${id:0:10}" | grep -q "^entry       $id" ||
  fail "show $id"

note "a corrupt entry: named with its field, skipped"
BAD=$ARCH/$(printf '%064d' 7).json
sed 's/"gpu": "[^"]*"/"gpu": 42/' "$ARCH/$id.json" > "$BAD"

note "arc2: the archive again, with the llm generator: examples in its prompts"
KEY=sk-arch-$RANDOM
$KB_PY "$FAKE" --port-file "$T/llm.port" --log "$T/llm.jsonl" --key "$KEY" \
  2> "$T/fake.log" &
BG_PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/llm.port" ] && break; sleep 0.1; done
PORT=$(cat "$T/llm.port") || fail "fake llm server did not start: $(cat "$T/fake.log")"
printf '%s\n' "$KEY" > "$T/llm.key"
chmod 600 "$T/llm.key"
campaign arc2 "$LADDER,
  \"generators\": {\"low_water\": 1, \"max_per_task\": 5,
    \"archive\": {\"path\": \"$ARCH\", \"examples\": 2},
    \"llm\": {\"api\": \"anthropic\", \"model\": \"fake-coder\", \"key_file\": \"$T/llm.key\",
              \"endpoint\": \"http://127.0.0.1:$PORT/v1/messages\", \"concurrency\": 1,
              \"timeout_seconds\": 10}}"
sed -i 's/"budget": {"gpu_seconds": 600}/"budget": {"gpu_seconds": 600, "llm_tokens": 400000}/' "$T/arc2.json"
$KB_PY "$TESTS_DIR/schema/validate.py" campaign "$T/arc2.json" || fail "arc2 fails its schema"
"$BIN/kb-submit" -q submit "$T/arc2.json" > /dev/null
run arc2
grep -q "archive: $BAD:[0-9]*:[0-9]*: \"gpu\" must be a string; entry skipped" "$T/arc2.sched.log" ||
  fail "corrupt entry not reported: $(grep -i 'archive' "$T/arc2.sched.log" | head -5)"
grep -q "new candidate from archive" "$T/arc2.sched.log" || fail "arc2 proposed nothing archived"
grep -q "already known: not proposed again" "$T/arc2.sched.log" ||
  fail "an archived seed was not recognised as known"
$KB_PY - "$T/llm.jsonl" "$T/list1.jsonl" <<'PY' || fail "archive examples in prompts"
import json, sys
log = [json.loads(l) for l in open(sys.argv[1])]
es = [json.loads(l) for l in open(sys.argv[2])]
sums = [e["prompt"] for e in log if e["task"] == "sum" and e["prompt"]]
assert sums, "no prompt for sum"
ex = [p for p in sums if "Archive example 1: task \"sum\"" in p]
assert ex, "no archive example in sum's prompts"
best = max((e for e in es if e["task"] == "sum" and e["campaign"] == "arc1"),
           key=lambda e: e["speedup"])
assert best["source"].strip().splitlines()[-2] in ex[0], "the example's source is not shown"
assert "same category (\"reduction\")" in ex[0]
mm = [e["prompt"] for e in log if e["task"] == "matmul" and "Archive example" in e["prompt"]]
assert all("task \"sum\"" not in p for p in mm), "a reduction example in a gemm prompt"
print("prompts: %d for sum, %d with archive examples" % (len(sums), len(ex)), file=sys.stderr)
PY

note "list --json | import into another folder: the same entries"
mkdir "$T/copy"
"$BIN/kb-submit" archive --archive "$ARCH" list --json 2> "$T/list2.err" > "$T/list2.jsonl"
grep -q "\"gpu\" must be a string; entry skipped" "$T/list2.err" || fail "list did not warn"
"$BIN/kb-submit" archive --archive "$T/copy" import - < "$T/list2.jsonl" > /dev/null
"$BIN/kb-submit" archive --archive "$T/copy" list --json > "$T/list3.jsonl"
cmp -s "$T/list2.jsonl" "$T/list3.jsonl" || fail "import changed the entries"
printf '{"schema": "kernelbrain.archive-entry/1"}\n' > "$T/bad.jsonl"
rc=0; "$BIN/kb-submit" archive --archive "$T/copy" import "$T/bad.jsonl" 2> "$T/imp.err" || rc=$?
[ $rc -eq 3 ] && grep -q 'bad.jsonl (line 1):1:1: "id" is required' "$T/imp.err" ||
  fail "bad import: rc $rc, $(cat "$T/imp.err")"
echo "archive: $(wc -l < "$T/list2.jsonl") entries after two campaigns" >&2
echo "PASS"
