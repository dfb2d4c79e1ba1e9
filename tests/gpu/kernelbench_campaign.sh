#!/usr/bin/env bash
# KernelBench through a campaign on the H200 (issue 14): the bundles tests/gpu/kernelbench.sh
# imported into $KB_WORK/tasks (default .gpu-run/, an ignored folder kept on a warm machine)
# with their two LLM-free seeds (identity.py: ModelNew = Model, must measure 1.00x eager;
# compile.py: forward through torch.compile) through `kb-launch --local`, ladder compile + full,
# every candidate to the full tier (eta 1), the full tier's timings capped at KB_FULL_MAX_S
# (default 1.0) seconds each. A second call resumes the campaign where the first
# stopped (Redis's AOF and the HDF5 files live in $KB_WORK/results).
# Started by `PHASE=campaign bash tests/gpu/kernelbench.sh` or directly, from the repository
# root, with the bundle of tests/gpu/kernelbench.sh ($BUNDLE, default .gpu-torch).
# KB_LEVELS (default all): the KernelBench levels the campaign takes, in that order; KB_TASKS
# (default all): the task ids it takes, in that order (an imported folder name, or its level
# and number: l2_22).
# KB_CAMPAIGN_LIMIT_S (default 500) bounds this call's wall time (SIGINT then: the runner
# releases its items; the next call picks them up).
# Outputs under $OUT: kb-campaign.txt (kb-launch's output, busy fraction, the per-task table,
# counts), kb-report.json (kb-submit report --format json), kb-summary.json, kb-identity.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(mktemp -d)}
B=${BUNDLE:-.gpu-torch}
W=${KB_WORK:-$PWD/.gpu-run}
LIMIT=${KB_CAMPAIGN_LIMIT_S:-500}
# torch's own cuDNN first: the system's older one (9.14 beside torch 2.11's 9.19 on the H200),
# found through /usr/lib/x86_64-linux-gnu, made every cuDNN RNN (level 3's LSTMs and GRUs) fail
# "cuDNN version incompatibility" while its convolutions ran
CUDNN=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
export LD_LIBRARY_PATH=${CUDNN:+$CUDNN:}/usr/lib/x86_64-linux-gnu:$PWD/$B/lib:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$PWD/$B/bin:$PATH:/usr/local/cuda/bin
export KB_INCLUDE_DIR=$PWD/common/include KB_SANDBOX_DIR=$PWD/$B/bin
export KB_PYTHON=$(command -v python3)
export PYTHONUNBUFFERED=1
LOG=$OUT/kb-campaign.txt
if [ ! -f "$W/campaign.json" ]; then
  python3 - "$W" > "$W/campaign.json" <<'PY' || exit 1
import json, os, sys
w = sys.argv[1]
c = json.load(open(os.path.join(w, "kernelbench.json")))
c["tasks"] = [os.path.normpath(os.path.join(w, t)) for t in c["tasks"]]
# KB_LEVELS (e.g. "3 2"): only the tasks of these KernelBench levels, in this order (a session's
# device time does not reach all 250 and its state does not outlive the session)
levels = os.environ.get("KB_LEVELS", "").split()
if levels:
    c["tasks"] = [t for l in levels for t in c["tasks"]
                  if os.path.basename(t).startswith("l%s_" % l)]
# KB_TASKS: only these task ids, in this order (tests/gpu/kb_missing.py lists the ones the
# committed results lack)
names = os.environ.get("KB_TASKS", "").split()
if names:
    # a name is an imported task's folder name or its level and number ("l2_22")
    by = dict((os.path.basename(t), t) for t in c["tasks"])
    for t in list(by.values()):
        short = "_".join(os.path.basename(t).split("_")[:2])
        by.setdefault(short, t)
    unknown = [n for n in names if n not in by]
    if unknown:
        sys.exit("kernelbench_campaign.sh: KB_TASKS names tasks the import has not: %s"
                 % " ".join(unknown))
    c["tasks"] = [by[n] for n in names]
c["results_dir"] = os.path.join(w, "results")
# the full tier's sampling capped at 1 s a timing (the default 3 s, for the candidate and again
# for its same-run baseline, made 5.7 s of device time per evaluation on level 1 at e442be0):
# 20 samples at least, so a 10 ms kernel still gets about 100
c["ladder"] = [{"name": "compile"},
               {"name": "full", "max_seconds": float(os.environ.get("KB_FULL_MAX_S", "1.0"))}]
c.setdefault("search", {})["eta"] = 1
print(json.dumps(c, indent=1))
PY
fi
ID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$W/campaign.json")
R=$W/results/$ID
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) commit ${KB_COMMIT:-unknown}; $(nproc) CPUs;" \
    "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
  echo "# campaign $ID: $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["tasks"]))' "$W/campaign.json") tasks, ladder $(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["ladder"]))' "$W/campaign.json"), eta 1, wall limit $LIMIT s; resumed: $([ -d "$R" ] && echo yes || echo no)"
} >> "$LOG"
nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader,nounits -lms 200 \
  >> "$OUT/kb-util.csv" 2>&1 &
SMI=$!
t0=$(date +%s.%N)
# KB_LOG=debug: the runner logs each item's evaluation, preparations and phases (kb_phases.py)
KB_LOG=${KB_LOG:-debug} timeout --foreground -k 60 -s INT "$LIMIT" kb-launch --local \
  "$W/campaign.json" >> "$LOG" 2>&1
echo "kb-launch exit $?" >> "$LOG"
t1=$(date +%s.%N)
kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "this call: campaign wall_s %.1f\n", b - a }' >> "$LOG"
for f in "$R"/redis/runner-0.log "$R"/redis/scheduler.log; do
  [ -f "$f" ] && { echo "== tail of $(basename "$f")"; tail -8 "$f"; } >> "$LOG"
done
grep -h "time split" "$R"/redis/runner-*.log >> "$LOG" 2>/dev/null
python3 tests/gpu/kb_phases.py "$R/redis/runner-0.log" >> "$LOG" 2>&1
kb-submit report --format json --out "$OUT/kb-report.json" "$R" >> "$LOG" 2>&1
echo "report exit $?" >> "$LOG"
cp "$R/summary.json" "$OUT/kb-summary.json" 2>/dev/null
python3 tests/gpu/kernelbench.py campaign "$OUT/kb-report.json" "$OUT/kb-util.csv" \
  "$OUT/kb-identity.json" >> "$LOG" 2>&1
tail -45 "$LOG"
