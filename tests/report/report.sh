#!/usr/bin/env bash
# kb-submit status, watch, report and export on a real small campaign: the host tasks (sum, with
# an extra seed whose source tries to inject script into the HTML report, and matmul), a real
# redis-server, scheduler and runner. Leaves the reports in OUT (argument 2) for html.sh.
# PROFILE_RUNNER (argument 3, tests/e2e/profile_runner.c) posts three results with a CUPTI
# profile alongside the runner, so the HTML report has kernel tables to show. sum gets a
# torch_reference, so the full tier times torch eager too (the CPU's torch: no torch.compile).
BIN=$1 OUT=$2 PROFILE_RUNNER=$3
source "$(dirname "$0")/../lib/common.sh"
HERE=$TESTS_DIR/report
rm -rf "$OUT" && mkdir -p "$OUT"

note "task bundles: sum with a hostile seed, matmul"
mkdir -p "$T/tasks"
cp -r "$REPO_DIR/tasks/host/sum" "$T/tasks/sum"
{ cat "$T/tasks/sum/seeds/naive.c"
  cat "$HERE/hostile.txt"; } > "$T/tasks/sum/seeds/hostile.c"
$KB_PY - "$T/tasks/sum/task.json" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["seeds"].append({"name": "hostile", "source": "seeds/hostile.c"})
spec["torch_reference"] = "torch_reference.py"
json.dump(spec, open(sys.argv[1], "w"), indent=1)
PY
cat > "$T/tasks/sum/torch_reference.py" <<'PY'
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x.sum().reshape(1)


def get_inputs():
    return [torch.rand(4194304)]


def get_init_inputs():
    return []
PY
start_redis
make_campaign rep
sed -i "s|\"$REPO_DIR/tasks/host/sum\"|\"$T/tasks/sum\"|" "$T/rep.json"

note "usage errors"
rc=0; "$BIN/kb-submit" --interval 0 watch rep 2> "$T/e.txt" || rc=$?
[ $rc -eq 2 ] || fail "--interval 0: exit $rc, want 2"
rc=0; "$BIN/kb-submit" --format pdf report rep 2> "$T/e.txt" || rc=$?
[ $rc -eq 2 ] || fail "--format pdf: exit $rc, want 2"
rc=0; "$BIN/kb-submit" watch nosuch 2> "$T/e.txt" || rc=$?
[ $rc -eq 1 ] && grep -q 'no campaign "nosuch"' "$T/e.txt" || fail "watch nosuch: $rc $(cat "$T/e.txt")"
rc=0; "$BIN/kb-submit" report "$T/empty" --format json 2> "$T/e.txt" || rc=$?
[ $rc -eq 1 ] || fail "report of a missing folder: exit $rc, want 1"

note "submit, then watch (lines and JSON) while a scheduler and a runner work"
"$BIN/kb-submit" submit "$T/rep.json" > /dev/null
"$BIN/kb-submit" watch rep --interval 0.3 > "$T/watch.txt" 2> "$T/watch.err" &
WATCH=$!; BG_PIDS+=($WATCH)
"$BIN/kb-submit" --json watch "$T/rep.json" -i 0.5 > "$T/watch.jsonl" 2> "$T/watchj.err" &
WATCHJ=$!; BG_PIDS+=($WATCHJ)
# A watch on a pseudo-terminal (script(1)) redraws in place; NO_COLOR drops the colours.
NO_COLOR=1 TERM=xterm script -qfec "$BIN/kb-submit watch rep -i 0.5" /dev/null > "$T/watch.tty" 2>&1 &
WATCHT=$!; BG_PIDS+=($WATCHT)
"$BIN/kb-scheduler" --campaign rep --cache "$T/sched" 2> "$T/sched.log" &
SCHED=$!; BG_PIDS+=($SCHED)
"$BIN/kb-runner" --campaign rep --cache "$T/cache" --name r1 2> "$T/runner.log" &
RUNNER=$!; BG_PIDS+=($RUNNER)
"$PROFILE_RUNNER" rep 3 > "$T/profiled" 2> "$T/profile_runner.log" &
PROFILER=$!; BG_PIDS+=($PROFILER)
# The report reads files the scheduler still writes (as a SWMR reader, up to the last commit).
# (up to 120 s: under ASan an evaluation with its unseen-input samples and the naive host
# oracles takes seconds, and the second task's first result can come 30 s in)
for _ in $(seq 1200); do
  [ -e "$T/results/rep/matmul.h5" ] && [ -e "$T/results/rep/sum.h5" ] && break
  sleep 0.1
done
[ -e "$T/results/rep/matmul.h5" ] && [ -e "$T/results/rep/sum.h5" ] ||
  fail "no result files of both tasks within 120 s: $(ls "$T/results/rep")"
"$BIN/kb-submit" report "$T/results/rep" --format json > "$T/running.json" ||
  fail "report while the campaign runs failed"
$KB_PY -c 'import json, sys; d = json.load(open(sys.argv[1])); assert len(d["tasks"]) == 2, d' \
  "$T/running.json" || fail "report while the campaign runs: $(head -c 300 "$T/running.json")"
wait_pid $SCHED 240 || fail "scheduler failed: $(tail -5 "$T/sched.log")"
wait_pid $RUNNER 30 || fail "runner failed: $(tail -5 "$T/runner.log")"
wait_pid $PROFILER 30 || fail "profile_runner failed: $(cat "$T/profile_runner.log")"
[ "$(cat "$T/profiled")" -ge 1 ] || fail "profile_runner posted no result"
wait_pid $WATCH 15 || fail "watch exit $?: $(cat "$T/watch.err")"
wait_pid $WATCHJ 15 || fail "watch --json exit $?: $(cat "$T/watchj.err")"
wait_pid $WATCHT 15 || fail "watch on a terminal exit $?: $(tail -3 "$T/watch.tty")"
[ ! -s "$T/watch.err" ] || fail "watch wrote to stderr: $(cat "$T/watch.err")"
cp "$T/watch.txt" "$OUT/watch.txt"
$KB_PY "$HERE/check_watch.py" "$T/watch.txt" "$T/watch.jsonl" "$T/watch.tty" rep

note "Ctrl-C stops a watch with exit 130"
"$BIN/kb-submit" --json status rep > "$T/status.json"
grep -q '"state":"done"' "$T/status.json" || fail "status --json: $(cat "$T/status.json")"
"$BIN/kb-submit" status rep > "$T/status.txt"
grep -q "^campaign rep: done" "$T/status.txt" || fail "status: $(cat "$T/status.txt")"
if grep -q $'\033' "$T/status.txt"; then fail "status to a file has escape sequences"; fi
# TERM=dumb on a terminal: plain lines, no escape sequence.
TERM=dumb script -qfec "$BIN/kb-submit watch rep" /dev/null > "$T/dumb.txt" 2>&1 ||
  fail "watch with TERM=dumb: $(cat "$T/dumb.txt")"
grep -q "^20[0-9-]*T[0-9:]*Z rep done items " "$T/dumb.txt" || fail "TERM=dumb: $(cat "$T/dumb.txt")"
if grep -q $'\033' "$T/dumb.txt"; then fail "TERM=dumb watch printed escape sequences"; fi
rcli HSET 'kb:{rep}:meta' state running > /dev/null   # pretend it runs, so watch waits
"$BIN/kb-submit" watch rep -i 0.2 > "$T/int.txt" 2>&1 &
INT=$!; BG_PIDS+=($INT)
sleep 1
kill -INT $INT
rc=0; wait_pid $INT 10 || rc=$?
[ $rc -eq 130 ] || fail "watch after SIGINT: exit $rc, want 130"
rcli HSET 'kb:{rep}:meta' state done > /dev/null

note "report in every format, export"
for f in json csv md html; do
  "$BIN/kb-submit" report rep --format $f --out "$OUT/report.$f" ||
    fail "report --format $f failed"
done
"$BIN/kb-submit" report "$T/results/rep" > "$T/stdout.html" || fail "report of a folder to stdout"
cmp -s <(sed 's/finished [^.]*\././' "$T/stdout.html") <(sed 's/finished [^.]*\././' "$OUT/report.html") ||
  fail "report to stdout differs from --out"
"$BIN/kb-submit" export "$T/rep.json" --out "$OUT/export.jsonl" || fail "export failed"
$KB_PY "$HERE/check_report.py" "$T/results/rep" "$OUT"

note "the notebook loader (tools/kbresults.py) and export --tier full on these files"
"$BIN/kb-submit" export "$T/rep.json" --tier full --out "$T/full.jsonl" || fail "export --tier full failed"
rc=0; "$BIN/kb-submit" export "$T/rep.json" --tier nosuch 2> "$T/e.txt" || rc=$?
[ $rc -eq 2 ] && grep -q 'the results have tiers compile, smoke, screen, full' "$T/e.txt" ||
  fail "export --tier nosuch: exit $rc: $(cat "$T/e.txt")"
$KB_PY "$HERE/check_loader.py" "$T/results/rep" "$OUT/report.json" "$T/full.jsonl" "$REPO_DIR/tools" ||
  fail "the loader"
ls -l "$OUT" >&2
echo "PASS"
