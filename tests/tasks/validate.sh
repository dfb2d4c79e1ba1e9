#!/bin/sh
# Validates the built-in CUDA suite without a GPU: validate.sh KB_SUBMIT PYTHON ROOT TASK_ID...
#  1. examples/suite/campaign.json passes `kb-submit validate` (the C loader: every bundle, every
#     referenced file) and names exactly the suite's tasks (TASK_ID...), none forgotten;
#  2. a campaign naming every folder of tasks/cuda/ (the suite and any other CUDA task) passes
#     `kb-submit validate`;
#  3. every tasks/cuda/*/task.json passes the JSON Schema (tests/schema/validate.py).
set -eu
submit=$1 python=$2 root=$3
shift 3
tmp=$(mktemp -d /tmp/kb-tasks-validate.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

"$submit" validate --json "$root/examples/suite/campaign.json" > "$tmp/suite.json"
"$python" - "$tmp/suite.json" "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
got = [t["id"] for t in doc["tasks"]]
want = sys.argv[2:]
assert doc["valid"] is True and doc["backend"] == "cuda", doc
assert sorted(got) == sorted(want), "suite campaign names %s, the suite is %s" % (got, want)
assert all(t["seeds"] >= 2 for t in doc["tasks"]), doc
print("examples/suite/campaign.json: %d tasks, %d seed candidates" % (len(got), doc["candidates"]))
PY

n=0
{
  printf '{"schema": "kernelbrain.campaign/1", "id": "all-cuda", "backend": "cuda",\n'
  printf ' "budget": {"gpu_seconds": 1}, "tasks": ['
  sep=""
  for d in "$root"/tasks/cuda/*/; do
    printf '%s"%s"' "$sep" "${d%/}"
    sep=", "
    n=$((n + 1))
  done
  printf ']}\n'
} > "$tmp/campaign.json"
"$submit" validate "$tmp/campaign.json"
"$python" "$root/tests/schema/validate.py" task "$root"/tasks/cuda/*/task.json
echo "schema: $n task.json files valid"
