#!/usr/bin/env bash
# Issue 14 on the H200 in calls of at most 10 minutes: all 250 KernelBench files imported, then
# the campaign over them with the two LLM-free seeds (tests/gpu/kernelbench_campaign.sh), resumed
# call after call on a warm machine (the work folder .gpu-run/ outlives a call there).
# From the repository root, with one bundle of every program (../shared/gpu/README.md):
#   ../shared/gpu/bundle.sh .gpu build/bin/*       (carry .gpu and .gpu-kb)
#   KB_COMMIT=<sha> KB_CALL_S=560 KB_TRUST=1 bash tests/gpu/kernelbench_all.sh
# KB_FILES: the KernelBench files to import (default all 250; tests/gpu/kb_missing.py --files
# lists those the committed results lack; KB_REST=1 sets it and KB_TASKS to that list); KB_LEVELS
# and KB_TASKS: see kernelbench_campaign.sh.
# KB_CALL_S: this call's own deadline in seconds (the campaign stops 30 s before it, resumable);
# KB_TRUST=1: tests/gpu/trust.sh torch runs beside the import (first call only; the steps
# KB_TRUST_STEPS, default torch, before the campaign when the import is done).
# Writes $OUT/kb-all.tar.gz (every output of the call: the import's lines, trust's torch.txt,
# the campaign's log, report, summary, identity table, utilisation samples, the runner's and
# scheduler's logs and the compile tier's build logs) and $OUT/kb-state.tar.gz (the work folder
# without the build cache: a call on a fresh machine, carrying it as .gpu-state/kb-state.tar.gz,
# resumes the campaign from it), and prints the campaign's last lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
T0=$(date +%s)
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
CALL=${KB_CALL_S:-560}
W=$PWD/.gpu-run
R=$(mktemp -d)
mkdir -p "$W"
export BUNDLE=${BUNDLE:-.gpu} KB_WORK=$W
# KB_REST=1: only the tasks the committed results lack or should run again
# (tests/gpu/kb_missing.py --outside --errors over the import of 2026-12-02, whose ids and files
# are this importer's)
if [ "${KB_REST:-0}" = 1 ]; then
  I=bench/results/gpu-tests/h200-2026-12-02-kernelbench-import.jsonl
  KB_FILES=$(python3 tests/gpu/kb_missing.py --outside --errors --files "$I" | tr '\n' ' ')
  KB_TASKS=$(python3 tests/gpu/kb_missing.py --outside --errors "$I" | tr '\n' ' ')
  export KB_FILES KB_TASKS
  echo "KB_REST: $(echo $KB_TASKS | wc -w) tasks" >> "$R/steps.txt"
fi
# a campaign carried from an earlier machine (.gpu-state/kb-state.tar.gz, the kb-state.tar.gz an
# earlier call wrote): the imported tasks, Redis's AOF and the HDF5 files; builds are redone
if [ ! -f "$W/imported" ] && [ -f .gpu-state/kb-state.tar.gz ]; then
  tar -xzf .gpu-state/kb-state.tar.gz -C "$W" &&
    echo "state restored from .gpu-state/kb-state.tar.gz ($(du -sh "$W" | cut -f1))" >> "$R/steps.txt"
fi
if [ ! -f "$W/imported" ]; then
  (
    export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:$PWD/$BUNDLE/lib
    # KB_FILES: only these KernelBench files (tests/gpu/kb_missing.py --files), else all 250
    python3 tools/kb-import-kernelbench --out "$W/tasks" --json --campaign "$W/kernelbench.json" \
      ${KB_FILES:-.gpu-kb/level1/*.py .gpu-kb/level2/*.py .gpu-kb/level3/*.py} \
      > "$R/import.jsonl" 2> "$R/import.err"
    echo "import exit $? $(( $(date +%s) - T0 )) s: $(tail -1 "$R/import.err")" >> "$R/steps.txt"
    touch "$W/imported"
  ) &
  IMPORT=$!
fi
if [ "${KB_TRUST:-0}" = 1 ]; then
  OUT=$R bash tests/gpu/trust.sh ${KB_TRUST_STEPS:-torch} > "$R/trust.txt" 2>&1
  echo "trust ${KB_TRUST_STEPS:-torch} $(( $(date +%s) - T0 )) s" >> "$R/steps.txt"
fi
[ -n "${IMPORT:-}" ] && wait "$IMPORT"
left=$(( CALL - ($(date +%s) - T0) - 30 ))
if [ -f "$W/imported" ] && [ "$left" -gt 60 ]; then
  OUT=$R KB_CAMPAIGN_LIMIT_S=$left bash tests/gpu/kernelbench_campaign.sh > "$R/campaign-out.txt" 2>&1
  echo "campaign call $left s limit, exit $?, done at $(( $(date +%s) - T0 )) s" >> "$R/steps.txt"
  tail -3 "$R/campaign-out.txt" >> "$R/steps.txt" # its own error, when it had one
  # where the evaluations' time went (the runner's debug lines, over every call that logged them)
  python3 tests/gpu/kb_phases.py "$W"/results/*/redis/runner-0.log >> "$R/steps.txt" 2>&1
fi
# the task folders' failures for the note: every non-ok full-tier line of the runner
grep -h "tier 1 (full)" "$W"/results/*/redis/runner-*.log 2>/dev/null | grep -v ": ok " \
  > "$R/full-not-ok.txt"
# the build logs of the compile tier's failures and warm-ups (the runner's cache folders)
for f in $(find "$W"/results/*/redis/cache -maxdepth 3 -name '*.log' 2>/dev/null | head -400); do
  echo "== $f"; tail -30 "$f"
done > "$R/build-logs.txt" 2>/dev/null
cp "$W"/results/*/redis/runner-*.log "$W"/results/*/redis/scheduler.log "$R/" 2>/dev/null
tar -czf "$OUT/kb-all.tar.gz" -C "$R" .
# the state a later call on another machine resumes from (carry it as .gpu-state/kb-state.tar.gz)
tar -czf "$OUT/kb-state.tar.gz" -C "$W" --exclude='./results/*/redis/cache' \
  --exclude='*.sock' --exclude='*.pid' . 2>/dev/null
echo "state $(du -h "$OUT/kb-state.tar.gz" | cut -f1) in kb-state.tar.gz" >> "$R/steps.txt"
cat "$R/steps.txt"
[ -f "$R/trust.txt" ] && tail -40 "$R/trust.txt"
[ -f "$R/kb-campaign.txt" ] && tail -25 "$R/kb-campaign.txt"
exit 0
