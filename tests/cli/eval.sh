#!/usr/bin/env bash
# kb-eval on a host task (docs/cli.md, "kb-eval"): exit codes, the text lines, --json parsed
# with Debian's python, the ladder stopping at a non-ok verdict, the seeds when no file is
# given, a .py (ModelNew) candidate on a C-oracle task (compile_error), a candidate that
# changes the sandbox's own process (rejected, the next one in a new process), and a bad
# command line and a malformed bundle.
# usage: eval.sh BIN_DIR SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
task=$src/tasks/host/gelu
py=/usr/bin/python3
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { "$bin/kb-eval" --cache "$dir/cache" "$@" > "$dir/out" 2> "$dir/err"; rc=$?; }
cat > "$dir/zeros.c" <<'C'
/* a wrong candidate: every output all zeros */
#include <string.h>
#include "kb_kernel.h"
int kb_forward(const kb_tensor *in, int n_in, kb_tensor *out, int n_out, void *stream) {
  (void)in; (void)n_in; (void)stream;
  for (int o = 0; o < n_out; o++)
    memset(out[o].data, 0, (size_t)kb_tensor_numel(&out[o]) * (size_t)kb_dtype_size(out[o].dtype));
  return 0;
}
C
good=$(ls "$task"/seeds/*.c | head -1)

run --tiers smoke "$task" "$good"
[ $rc -eq 0 ] && grep -Eq "^gelu +$(basename "$good") +smoke +ok " "$dir/out" ||
  fail "a correct candidate: exit $rc: $(cat "$dir/out" "$dir/err" | head -c 400)"

run --tiers smoke --json "$task" "$good" "$dir/zeros.c"
[ $rc -eq 1 ] || fail "a wrong candidate among the files: exit $rc, not 1"
$py - "$dir/out" "$good" "$dir/zeros.c" <<'PY' || fail "--json: $(head -c 600 "$dir/out")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
objs = [json.loads(l) for l in lines]
assert [o["file"] for o in objs] == sys.argv[2:], objs
assert all(o["task"] == "gelu" and o["tier"] == "smoke" and o["wall_s"] > 0 for o in objs)
ok, wrong = objs[0]["result"], objs[1]["result"]
assert ok["status"] == "ok" and ok["tier_name"] == "smoke" and ok["timing"]["samples"] > 0, ok
assert ok["check"]["sets"] >= 1 and len(ok["candidate"]) == 64, ok
assert wrong["status"] == "wrong_output" and "output" in wrong["reason"], wrong
PY

# the ladder: a wrong candidate is not evaluated past its first tier; tiers by number too
run --tiers 1,3 --json "$task" "$dir/zeros.c"
[ $rc -eq 1 ] && [ "$(wc -l < "$dir/out")" -eq 1 ] ||
  fail "the ladder: exit $rc, $(wc -l < "$dir/out") lines (want 1)"

# no file: the task's seeds
run --tiers smoke --json "$task"
n_seeds=$(ls "$task"/seeds/*.c | wc -l)
[ $rc -eq 0 ] && [ "$(wc -l < "$dir/out")" -eq "$n_seeds" ] ||
  fail "the seeds: exit $rc, $(wc -l < "$dir/out") lines (want $n_seeds)"

# one sandbox process for many candidates: one that rewrites the sandbox's own clock (the
# catalogue's timer_forge) is rejected at its first tier and its process replaced, so the
# honest candidate after it runs in a new process on a true clock (before 2026-12-06 it was
# timed 40x fast there, and rejected by the witness at the full tier)
rowsum=$src/tasks/host/row_sum
cat=$src/tests/catalogue/host
run --tiers smoke --json "$rowsum" "$cat/honest_naive.c"
cp "$dir/out" "$dir/alone.json"
run --tiers smoke --json "$rowsum" "$cat/timer_forge.c" "$cat/honest_naive.c"
$py - "$dir/alone.json" "$dir/out" <<'PY' || fail "a forged clock between candidates: $(head -c 900 "$dir/out")"
import json, sys
alone = json.loads(open(sys.argv[1]).read())["result"]
forge, after = [json.loads(l)["result"] for l in open(sys.argv[2]).read().splitlines()]
assert forge["status"] == "rejected" and "changed the sandbox's own process" in forge["reason"], forge
assert alone["status"] == "ok" and after["status"] == "ok", (alone, after)
# the honest file after the forge against itself in a process of its own: the same clock (on
# the forged one it timed 40x fast)
a, b = after["timing"]["median_us"], alone["timing"]["median_us"]
assert 0.25 < a / b < 4, (a, b)
PY

printf 'class ModelNew:\n    pass\n' > "$dir/model_new.py"
run --tiers smoke "$task" "$dir/model_new.py"
[ $rc -eq 1 ] && grep -q "compile_error" "$dir/out" ||
  fail "a .py candidate on a task without a PyTorch oracle: exit $rc: $(head -c 300 "$dir/out")"

run --tiers nosuch "$task" "$good"
[ $rc -eq 2 ] && [ "$(wc -l < "$dir/err")" -eq 2 ] && grep -q 'unknown tier "nosuch"' "$dir/err" ||
  fail "a bad --tiers: exit $rc: $(head -c 300 "$dir/err")"
run --backend gpu "$task" "$good"
[ $rc -eq 2 ] || fail "a bad --backend: exit $rc"
run
[ $rc -eq 2 ] && grep -q "missing TASK_DIR" "$dir/err" || fail "no TASK_DIR: exit $rc"

mkdir -p "$dir/broken"
printf '{"schema": "kernelbrain.task/1", "id": }\n' > "$dir/broken/task.json"
run "$dir/broken" "$good"
[ $rc -eq 3 ] && grep -q "broken/task.json:1:" "$dir/err" ||
  fail "a malformed task.json: exit $rc: $(head -c 300 "$dir/err")"

# KB_CACHE set but empty (a job script's `export KB_CACHE=$SCRATCH_CACHE` with the variable
# unset): the default folder, as when unset; before, `cannot create "": No such file or
# directory`, naming neither the variable nor a folder
# (the default, /tmp/kb-cache-$USER, under a user name of this run's own)
KB_CACHE= USER="kbt-eval-$$" "$bin/kb-eval" --tiers smoke "$task" "$good" > "$dir/out" 2> "$dir/err"
rc=$?
[ $rc -eq 0 ] && [ -d "/tmp/kb-cache-kbt-eval-$$" ] ||
  fail "an empty KB_CACHE: exit $rc: $(tail -c 300 "$dir/err")"
rm -rf "/tmp/kb-cache-kbt-eval-$$"

[ $fails -eq 0 ] && echo "kb-eval: all checks passed" || echo "kb-eval: $fails failed"
exit $((fails > 0))
