#!/usr/bin/env bash
# The host suite end to end: test_host_suite.sh BIN_DIR
# examples/suite-host/campaign.json (the host variants of the 13 suite tasks) must name exactly
# the suite and pass kb-submit validate and the JSON Schemas (with its 13 task.json); then that
# campaign, with a quick ladder and one tune proposal per task, runs through
# `kb-launch --local` (its own redis-server, the scheduler, one host runner, the tune
# generator) to the end, and test_host_suite.py checks the HDF5 files with h5py (every task has
# an ok evaluation at the top tier, the naive baseline among them, and a tune-made candidate)
# and `kb-submit report --format json` (a best speedup for every task).
BIN=$1
source "$(dirname "$0")/../lib/common.sh"
unset KB_REDIS
TASKS=(gelu row_sum softmax layernorm matmul_f32 matmul_f16 bmm transpose conv2d maxpool2d
       attention cross_entropy scan)
CAMPAIGN=$REPO_DIR/examples/suite-host/campaign.json

note "kb-submit validate: the campaign names the 13 host variants"
"$BIN/kb-submit" validate --json "$CAMPAIGN" > "$T/validate.json" ||
  fail "kb-submit validate failed: $(cat "$T/validate.json")"
$KB_PY - "$T/validate.json" "${TASKS[@]}" <<'PY' || fail "the campaign is not the host suite"
import json, sys
doc = json.load(open(sys.argv[1]))
got = sorted(t["id"] for t in doc["tasks"])
assert doc["valid"] is True and doc["backend"] == "host", doc
assert got == sorted(sys.argv[2:]), "campaign names %s" % got
assert all(t["seeds"] == 2 for t in doc["tasks"]), doc
PY
bundles=()
for t in "${TASKS[@]}"; do bundles+=("$REPO_DIR/tasks/host/$t/task.json"); done
$KB_PY "$TESTS_DIR/schema/validate.py" task "${bundles[@]}" || fail "a task.json fails the schema"
$KB_PY "$TESTS_DIR/schema/validate.py" campaign "$CAMPAIGN" || fail "the campaign fails the schema"

note "the campaign with a small budget and a quick ladder"
$KB_PY - "$CAMPAIGN" "$T/results" > "$T/suite-host.json" <<'PY'
import json, os, sys
c = json.load(open(sys.argv[1]))
base = os.path.dirname(os.path.abspath(sys.argv[1]))
c["tasks"] = [os.path.normpath(os.path.join(base, t)) for t in c["tasks"]]
c["results_dir"] = sys.argv[2]
# one tune proposal per task bounds the work; the budget only has to leave every task's share
# (docs/search.md, rebalanced caps) room for that proposal's reservations: with 300 s a clean-clone
# CI on a loaded machine (CPU time inflated) left cross_entropy's cap short, and no proposal came
c["budget"] = {"gpu_seconds": 1200}
c["lease_seconds"] = 30
c["ladder"] = [
    {"name": "compile", "timeout_seconds": 60},
    {"name": "smoke", "warmup": 0, "min_samples": 1, "max_samples": 1},
    {"name": "screen", "warmup": 0, "min_samples": 1, "max_samples": 5, "max_seconds": 0.02},
    {"name": "full", "warmup": 0, "min_samples": 2, "max_samples": 10, "max_seconds": 0.05},
]
c["generators"] = {"seed": True, "max_per_task": 1, "tune": {"weight": 1}}
print(json.dumps(c, indent=1))
PY
t0=$(date +%s)
timeout 300 "$BIN/kb-launch" --local --json "$T/suite-host.json" > "$T/launch.json" \
  2> "$T/launch.err" || fail "kb-launch failed: $(tail -20 "$T/launch.err")"
echo "kb-launch: $(( $(date +%s) - t0 )) s" >&2
grep -q '"state": "done"' "$T/launch.json" || fail "campaign not done: $(cat "$T/launch.json")"
pgrep -f "$T/results/suite-host/redis" > /dev/null && fail "processes left running"

note "the HDF5 files (h5py) and the report"
$KB_PY "$TESTS_DIR/e2e/check_results.py" "$T/results/suite-host" --campaign suite-host \
  --tasks "${TASKS[@]}" --baseline-tier 3 || fail "check_results.py"
"$BIN/kb-submit" report --format json "$T/results/suite-host" > "$T/report.json" ||
  fail "kb-submit report failed"
$KB_PY "$TESTS_DIR/tasks/test_host_suite.py" "$T/results/suite-host" "$T/report.json" \
  "${TASKS[@]}" || fail "test_host_suite.py"
echo "PASS"
