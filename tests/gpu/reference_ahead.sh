#!/usr/bin/env bash
# torch.compile compiled ahead (docs/sandbox.md), measured on the GPU machine: for each
# KernelBench file, the trusted worker's torch.compile timing (kb-eval --tiers full on the
# task's identity seed, KB_LOG=debug: "torch compile timed in S s") with the reference caches
# cold, then with a fresh cache that kb_build_modelnew.py --reference filled first (what a
# runner's compile pool does at the task's first claim), and the two torch.compile medians.
# From the repository root, with the bundle (../shared/gpu/README.md):
#   KB_COMMIT=<sha> bash tests/gpu/reference_ahead.sh FILE...     (outputs under $OUT)
# Writes $OUT/reference-ahead.txt (the table, then a JSON line) and the kb-eval logs.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh
kb_gpu_env /usr/local/cuda/extras/CUPTI/lib64
mkdir -p "$OUT"
W=$(mktemp -d)
T=$OUT/reference-ahead.txt
kb_gpu_log "$T"
python3 tools/kb-import-kernelbench --out "$W/tasks" "$@" > "$OUT/import.txt" 2>&1
echo "task cold_compile_s ahead_build_s warm_compile_s cold_compile_us warm_compile_us" >> "$T"
rows=()
for d in "$W"/tasks/*/; do
  id=$(basename "$d")
  # one kb-eval of the identity seed at the full tier with cache $1; prints "S US" (the
  # trusted worker's torch.compile request seconds and its median)
  eval_once() {
    KB_LOG=debug kb-eval --backend cuda --tiers full --cache "$1" --json "$d" "$d/seeds/identity.py" \
      > "$OUT/$id-$2.json" 2> "$OUT/$id-$2.log"
    local s us
    s=$(grep -o "torch compile timed in [0-9.]* s" "$OUT/$id-$2.log" | head -1 | awk '{print $5}')
    us=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l).get("result") or {}
    v = (r.get("timing") or {}).get("torch_compile_us")
    print(v if v is not None else "-"); break' "$OUT/$id-$2.json" 2>/dev/null)
    echo "${s:--} ${us:--}"
  }
  read -r cs cus <<< "$(eval_once "$W/cold" cold)"
  C=$W/ahead; mkdir -p "$C/reference.jit/triton" "$C/reference.jit/inductor" "$W/out-$id"
  t0=$(date +%s.%N)
  TRITON_CACHE_DIR=$C/reference.jit/triton TORCHINDUCTOR_CACHE_DIR=$C/reference.jit/inductor \
    "$KB_PYTHON" -I -B "$B/bin/kb_build_modelnew.py" --reference --oracle "$d/reference.py" \
    --out "$W/out-$id" --backend cuda > "$OUT/$id-ahead.log" 2>&1
  bs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  cat "$W/out-$id/build.json" >> "$OUT/$id-ahead.log" 2>/dev/null
  read -r ws wus <<< "$(eval_once "$C" warm)"
  echo "$id $cs $bs $ws $cus $wus" >> "$T"
  rows+=("{\"task\": \"$id\", \"cold_s\": \"$cs\", \"ahead_s\": \"$bs\", \"warm_s\": \"$ws\", \"cold_us\": \"$cus\", \"warm_us\": \"$wus\"}")
done
(IFS=,; echo "{\"bench\": \"reference_ahead\", \"commit\": \"${KB_COMMIT:-unknown}\", \"rows\": [${rows[*]}]}") >> "$T"
cat "$T"
