#!/usr/bin/env bash
# KernelBench on the H200 (issues 7 and 14): the PyTorch oracle on the task files of levels
# $LEVELS (default 1 2 3: all 250). Builds nothing there. The task files are other people's: they
# travel in the ignored folder .gpu-kb/ (level1/*.py ... level3/*.py from the public KernelBench
# repository, and its published H100 times results/timing/H100_Modal/baseline_time_torch.json and
# baseline_time_torch_compile_inductor_default.json as h100_eager.json and h100_compile.json),
# never in the repository.
# From the repository root, after bundling
#   ../shared/gpu/bundle.sh .gpu-torch build/bin/kb-test-torch-eval build/bin/kb-sandbox-cuda \
#       build/bin/kb-sandbox build/bin/kb_sandbox_torch.py
# on the device (carry .gpu-torch and .gpu-kb):
#   KB_COMMIT=$(git rev-parse --short HEAD) BUNDLE=.gpu-torch bash tests/gpu/kernelbench.sh
# Steps, each under a deadline from the start (the whole run stays under ~8 minutes):
#  1. tools/kb-import-kernelbench on every file of the levels (torch 2.11's meta device)
#  2. end to end through the runner's evaluator (kb-test-torch-eval --backend cuda: nvcc, the
#     sandbox client, the PyTorch worker on the GPU): task 19 (ReLU, 4096 x 393216) with a
#     hand-written CUDA ReLU (ok, smoke and full: eager and torch.compile timed in the same
#     process) and a wrong one (wrong_output); task 88 (tanh GELU) with a CUDA kernel (ok)
#  3. torch.compile of every module in parallel processes (fills TORCHINDUCTOR_CACHE_DIR)
#  4. one PyTorch worker, sequentially: prepare (input set 0 drawn on the GPU, reference
#     outputs) and the "torch" request (eager and torch.compile, L2 flushed) per task
#  5. the table against KernelBench's H100 baselines, and a JSON line with the counts
# Outputs under $OUT: kernelbench.txt (header, end-to-end lines, table), kernelbench.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
T0=$(date +%s)
OUT=${OUT:-$(mktemp -d)}
B=${BUNDLE:-.gpu-torch}
KB=${KB_FILES:-.gpu-kb}
WARM_UNTIL=${WARM_UNTIL:-170}   # seconds after the start: no compile warm-up starts later
TIME_UNTIL=${TIME_UNTIL:-390}   # no timing starts later
JOBS=${JOBS:-8}
LEVELS=${LEVELS:-1 2 3}
FILES=$(for l in $LEVELS; do ls $KB/level$l/*.py; done)
# the system's libraries first (python and torch must not load the bundle's Debian copies of
# libz, libssl, libffi...), the bundle's for what the system lacks (jansson, hiredis, HDF5, ...)
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:$PWD/$B/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$PWD/$B/bin:$PATH:/usr/local/cuda/bin
export KB_INCLUDE_DIR=$PWD/common/include KB_SANDBOX_DIR=$PWD/$B/bin
export KB_PYTHON=$(command -v python3)
export PYTHONUNBUFFERED=1
export KB_SANDBOX_TORCH_MAX_PREPARED=1  # the bulk run's worker keeps one task (memory)
# The work folder outlives the call (an ignored folder of the checkout, kept on a warm machine):
# PHASE=campaign in a later call runs the campaign over the bundles imported here. The inductor
# cache is torch's default one (/tmp/torchinductor_$USER), which the runner's trusted worker, whose
# environment is scrubbed, finds too.
W=${KB_WORK:-$PWD/.gpu-run}
PHASE=${PHASE:-time}  # smoke: steps 1-2 only; campaign: kernelbench_campaign.sh
mkdir -p "$W"
if [ "$PHASE" = campaign ]; then
  exec bash tests/gpu/kernelbench_campaign.sh
fi
rm -rf "$W/tasks"
TXT=$OUT/kernelbench.txt
WORKER=$PWD/$B/bin/kb_sandbox_torch.py
H=tests/gpu/kernelbench.py
{
  echo "# KernelBench levels $LEVELS on the PyTorch oracle, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit ${KB_COMMIT:-unknown}"
  echo "# machine: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1);" \
    "$(nproc) CPUs; $(python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' 2>&1)"
  echo "# files: $(echo "$FILES" | wc -l) KernelBench task files of levels $LEVELS (ScalingIntelligence/KernelBench), H100 times from its results/timing/H100_Modal"
} > "$TXT"

echo "## 1. import" >> "$TXT"
t=$(date +%s)
python3 tools/kb-import-kernelbench --out "$W/tasks" --json --campaign "$W/kernelbench.json" $FILES \
  > "$OUT/import.jsonl" 2> "$W/import.err"
echo "import exit $?, $(( $(date +%s) - t )) s; $(tail -1 "$W/import.err")" >> "$TXT"
grep -v "^imported" "$W/import.err" >> "$TXT"

echo "## 2. end to end through kb-test-torch-eval (tiers 1 = smoke, 3 = full): C/CUDA and KernelBench-format (ModelNew) candidates, the LLM-free seeds" >> "$TXT"
C=tests/gpu/kernelbench_candidates
t=$(date +%s)
e2e() {  # e2e LIMIT_S TASK FILE...
  local lim=$1 task=$W/tasks/$2
  shift 2
  [ -d "$task" ] || { echo "$task: not imported" >> "$TXT"; return; }
  timeout "$lim" kb-test-torch-eval --backend cuda --cache "$W/cache" --tiers 13 "$task" "$@" \
    >> "$TXT" 2>> "$W/e2e.err"
  echo "exit $? ($(basename "$task"))" >> "$TXT"
}
e2e 150 l1_19_relu "$C/relu.cu" "$C/relu_wrong.cu" "$C/relu_inline.py" \
  "$W/tasks/l1_19_relu/seeds/identity.py" "$W/tasks/l1_19_relu/seeds/compile.py"
e2e 60 l1_88_mingptnewgelu "$C/gelu_tanh.cu"
for tk in l1_5_matrix_scalar_multiplication l3_9_resnet18 l3_16_densenet201; do
  e2e 120 $tk "$W/tasks/$tk/seeds/identity.py" "$W/tasks/$tk/seeds/compile.py"
done
echo "end to end $(( $(date +%s) - t )) s" >> "$TXT"
grep -v " debug: " "$W/e2e.err" | tail -25 >> "$TXT"
if [ "$PHASE" = smoke ]; then
  tail -60 "$TXT"
  exit 0
fi

echo "## 3. torch.compile warm-up, $JOBS processes" >> "$TXT"
t=$(date +%s)
for i in $(seq 0 $((JOBS - 1))); do
  timeout $((WARM_UNTIL + 60 - (t - T0))) python3 "$H" warm "$WORKER" "$W/tasks" "$i" "$JOBS" \
    $((T0 + WARM_UNTIL)) "$OUT/warm.jsonl" 2> "$W/warm-$i.err" &
done
wait
echo "warm-up $(( $(date +%s) - t )) s, $(grep -c '"warm": "ok"' "$OUT/warm.jsonl") compiled" >> "$TXT"
nvidia-smi --query-gpu=memory.used --format=csv,noheader >> "$TXT"

echo "## 4. prepare and time, one worker" >> "$TXT"
t=$(date +%s)
timeout $((TIME_UNTIL + 60 - (t - T0))) python3 "$H" time "$WORKER" "$W/tasks" \
  $((T0 + TIME_UNTIL)) "$OUT/time.jsonl" 2> "$W/time.err"
echo "timing exit $?, $(( $(date +%s) - t )) s" >> "$TXT"
tail -5 "$W/time.err" >> "$TXT"

echo "## 5. table (ms; ratios: this H200 run over KernelBench's H100 baseline)" >> "$TXT"
python3 "$H" table "$OUT/import.jsonl" "$OUT/time.jsonl" "$OUT/warm.jsonl" \
  "$KB/h100_eager.json" "$KB/h100_compile.json" "$OUT/kernelbench.json" >> "$TXT" 2>&1
echo "# total $(( $(date +%s) - T0 )) s" >> "$TXT"
tail -60 "$TXT"
