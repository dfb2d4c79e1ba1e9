#!/usr/bin/env bash
# KernelBench tasks whose tensors take a tenth of the device or more (level 1's norms, 7-8 GiB a
# tensor), evaluated at the full tier as a campaign's runner does (kb-eval: the confined
# PyTorch worker, the witness in the trusted one, torch eager and compile), to show that the two
# workers share the device without an infra_error: on an 80 GB H100 at d0cedf0, l1_38 and l1_39
# ended "ran out of device memory" at every attempt (the trusted worker's 16 GiB beside the
# confined worker's planned 56 GiB) and l1_35, l1_36 and l1_84 "the witness did not run: the
# confined process is not running" (the trusted worker's prepare for the witness released the
# confined worker, which was then stopped). docs/sandbox.md, "release".
# From the repository root, with the bundle (../shared/gpu/README.md):
#   KB_COMMIT=<sha> bash tests/gpu/big_tasks.sh FILE...     (outputs under $OUT)
# Writes $OUT/big-tasks.txt (per task: verdict, its reason, the runner's memory lines; then a
# JSON line) and each task's kb-eval log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh
kb_gpu_env /usr/local/cuda/extras/CUPTI/lib64
mkdir -p "$OUT"
W=$(mktemp -d)
T=$OUT/big-tasks.txt
kb_gpu_log "$T"
python3 tools/kb-import-kernelbench --out "$W/tasks" "$@" > "$OUT/import.txt" 2>&1
echo "task status wall_s retried_for_room released reason" >> "$T"
rows=()
ok=0 n=0
for d in "$W"/tasks/*/; do
  id=$(basename "$d")
  KB_LOG=debug kb-eval --backend cuda --tiers full --cache "$W/cache" --json "$d" \
    "$d/seeds/identity.py" > "$OUT/$id.json" 2> "$OUT/$id.log"
  read -r st wall reason <<< "$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    o = json.loads(l); r = o.get("result") or {}
    print(r.get("status", "none"), "%.1f" % o.get("wall_s", 0), (r.get("reason") or o.get("error") or "-").replace(" ", "_")[:120]); break
else:
    print("none 0 no_output")' "$OUT/$id.json" 2>/dev/null)"
  again=$(grep -c "once more with the trusted worker's tasks released" "$OUT/$id.log")
  rel=$(grep -c "released [0-9]* prepared task" "$OUT/$id.log")
  echo "$id $st $wall $again $rel $reason" >> "$T"
  n=$((n + 1))
  [ "$st" = ok ] && ok=$((ok + 1))
  rows+=("{\"task\": \"$id\", \"status\": \"$st\", \"wall_s\": $wall, \"retried_for_room\": $again}")
  grep -h "memory, task\|out of device memory\|stopped; a new one" "$OUT/$id.log" | cut -c1-400 >> "$T"
done
(IFS=,; echo "{\"bench\": \"big_tasks\", \"commit\": \"${KB_COMMIT:-unknown}\", \"device\": \"$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)\", \"tasks\": $n, \"ok\": $ok, \"rows\": [${rows[*]}]}") >> "$T"
cat "$T"
