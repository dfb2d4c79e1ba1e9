#!/usr/bin/env bash
# The built-in CUDA suite (tasks/cuda, examples/suite/campaign.json) on the GPU machine with the
# tune generator: issue 7's demo (per task, the speedup of the best kernel over the naive seed and
# over the tunable seed at its default knobs) and issue 4's GPU busy fraction over a campaign of
# about 200 candidates (nvidia-smi's utilization.gpu, sampled every 100 ms: the share of time a
# kernel was running; the campaign's own verification kernels count too).
# Builds nothing there. From the repository root, after bundling kb-launch, kb-runner,
# kb-scheduler, kb-submit, kb-sandbox-cuda into $BUNDLE (default .gpu):
#   BUNDLE=.gpu bash tests/gpu/suite.sh          (outputs under $OUT)
# KB_SUITE_PER_TASK (default 14) bounds the tune proposals per task; KB_SUITE_LIMIT_S (default
# 240) the campaign's wall time (SIGINT then: runners release their work; the files stay).
# KB_SUITE_RUNNER_ARGS: options given to every kb-runner (e.g. "--metrics every --sample-chunk 1
# --fresh full", the behaviour before issue 17: hardware metrics of every full-tier evaluation, a
# host wait after every timed sample, three fresh samples at least at every tier).
# KB_SUITE_AB=1: the campaign twice in one call, first with the runner's defaults and
# KB_SUITE_RUNNER_ARGS ("new"), then with KB_SUITE_OLD_ARGS (default "--metrics every
# --sample-chunk 1 --fresh full") ("old"), same candidates (the tune generator is
# deterministic), and a before/after table last. KB_SUITE_OLD_RUNNER: a kb-runner binary (another
# commit's, built with the same bundle's libraries) the "old" campaign runs instead of the
# bundle's, with KB_SUITE_OLD_ARGS (then default none): two commits compared on one machine.
# Writes $OUT/suite-launch.txt (kb-launch's output, the busy fraction, the runner's time split,
# the sandbox's phases per tier: tests/gpu/suite_phases.py, its preparations per task:
# tests/gpu/suite_prep.py), $OUT/suite-report.json (kb-submit
# report --format json), $OUT/suite-util.csv, the runner's and scheduler's logs and
# $OUT/suite-h5.tar.gz (the campaign's HDF5 files); tests/gpu/suite_table.py turns the report into
# the per-task table. With KB_SUITE_AB=1 the second campaign's files are suite-old-*.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh
kb_gpu_env /usr/local/cuda/extras/CUPTI/lib64
PER_TASK=${KB_SUITE_PER_TASK:-14}
LIMIT=${KB_SUITE_LIMIT_S:-240}
# KB_SUITE_ETA=1: every candidate climbs every tier (a pool for kb-bench-ladder without the
# promotion policy's bias: tools/export_pool.py on suite-h5.tar.gz); default: the campaign's
ETA=${KB_SUITE_ETA:-}
# campaign LABEL RUNNER_ARGS: one campaign; its files are $OUT/suite-<LABEL>* ("" for the
# first, plain names); appends its summary row to $OUT/suite-summary.txt
campaign() {
  local label=$1 rargs=$2 rbin=${3:-$PWD/$B/bin/kb-runner} sfx=${1:+-$1} dir bin
  dir=$(mktemp -d)
  python3 - "$PWD" "$dir" "$PER_TASK" "$ETA" > "$dir/campaign.json" <<'PY'
import json, sys
root, d, per_task, eta = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
c = json.load(open(root + "/examples/suite/campaign.json"))
c["tasks"] = [root + "/" + t.replace("../../", "") for t in c["tasks"]]
c["results_dir"] = d + "/results"
c["generators"]["max_per_task"] = per_task
if eta:
    c.setdefault("search", {})["eta"] = int(eta)
print(json.dumps(c, indent=1))
PY
  # kb-launch starts the kb-runner next to itself: options for it go through a copy of kb-launch
  # and kb-scheduler beside a kb-runner that adds them
  bin=$B/bin
  if [ -n "$rargs" ] || [ "$rbin" != "$PWD/$B/bin/kb-runner" ]; then
    bin=$dir/bin; mkdir -p "$bin"
    cp "$B/bin/kb-launch" "$B/bin/kb-scheduler" "$bin/"
    printf '#!/bin/sh\nexec "%s" "$@" %s\n' "$rbin" "$rargs" > "$bin/kb-runner"
    chmod +x "$bin/kb-runner"
  fi
  local LOG=$OUT/suite$sfx-launch.txt
  {
    echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) commit ${KB_COMMIT:-unknown}; $(nproc) CPUs;" \
      "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
    echo "# campaign: examples/suite/campaign.json, tune max_per_task $PER_TASK, eta ${ETA:-default}, wall limit $LIMIT s, runner options: ${rargs:-none}, runner: $("$rbin" --version 2>&1 | head -1)"
  } > "$LOG"
  nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader,nounits -lms 100 \
    > "$OUT/suite$sfx-util.csv" 2>&1 &
  local SMI=$! t0 t1
  t0=$(date +%s.%N)
  # KB_LOG=debug: the runner logs each item's timeline (claim, build, evaluation, preparation)
  # and each evaluation's phases in the sandbox (suite_phases.py)
  # --foreground: the SIGINT reaches kb-launch alone, which stops its runners (they release their
  # leases) before Redis; without it timeout signals the whole process group, Redis exits first and
  # the runners spend their Redis retry budget (120 s) on the releases. -k: SIGKILL 90 s later.
  KB_LOG=${KB_LOG:-debug} timeout --foreground -k 90 -s INT "$LIMIT" "$bin/kb-launch" --local \
    "$dir/campaign.json" >> "$LOG" 2>&1
  echo "kb-launch exit $?" >> "$LOG"
  t1=$(date +%s.%N)
  kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "campaign wall_s %.1f\n", b - a }' >> "$LOG"
  # Busy fraction between the first and the last sample in which the GPU was busy (the campaign's
  # start-up - redis, nvcc of the first candidates - and its tail are reported separately).
  python3 - "$OUT/suite$sfx-util.csv" >> "$LOG" <<'PY'
import sys
u = []
for line in open(sys.argv[1]):
    parts = line.strip().split(",")
    if len(parts) == 2 and parts[1].strip().isdigit():
        u.append(int(parts[1]))
busy = [i for i, v in enumerate(u) if v > 0]
if not busy:
    print("gpu busy: no sample above 0 (%d samples)" % len(u))
else:
    a, b = busy[0], busy[-1]
    mid = u[a:b + 1]
    print("gpu busy: %d samples at 100 ms; whole run mean %.1f %%; from first to last busy sample"
          " (%.1f s) mean %.1f %%; samples at 0 in that span %d" %
          (len(u), sum(u) / len(u), len(mid) / 10, sum(mid) / len(mid), mid.count(0)))
PY
  ls "$dir/results/suite" >> "$LOG" 2>&1
  local f
  for f in "$dir/results/suite/redis/runner-0.log" "$dir/results/suite/redis/scheduler.log"; do
    echo "== tail of $(basename "$f")" >> "$LOG"; tail -15 "$f" >> "$LOG" 2>&1
    cp "$f" "$OUT/suite$sfx-$(basename "$f")" 2>/dev/null # whole logs: where the GPU waited
  done
  kb-submit report --format json --out "$OUT/suite$sfx-report.json" "$dir/results/suite" >> "$LOG" 2>&1
  echo "report exit $?" >> "$LOG"
  # the runner's time split (its summary line at exit), the sandbox's phases per tier and the
  # campaign's HDF5 files
  grep -h "time split" "$dir/results/suite/redis/runner-0.log" >> "$LOG" 2>/dev/null
  python3 tests/gpu/suite_phases.py "$dir/results/suite/redis/runner-0.log" "${label:-new}" \
    >> "$LOG" 2>&1
  # the confined sandbox's preparations per task (what runner/sandbox/prep_keep.c kept)
  python3 tests/gpu/suite_prep.py "$dir/results/suite/redis/runner-0.log" >> "$LOG" 2>&1
  (cd "$dir/results/suite" && tar -czf "$OUT/suite$sfx-h5.tar.gz" ./*.h5) >> "$LOG" 2>&1
  python3 - "$LOG" "${label:-new}" "${rargs:-defaults}" >> "$OUT/suite-summary.txt" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
def grab(pat):
    m = re.search(pat, t)
    return m.group(1) if m else "-"
rows = {}  # suite_phases.py's rows: tier evals sandbox load check warm-up samples fresh trace
for line in t.splitlines():  # re-check metrics passes waits
    f = line.split()
    if len(f) == 13 and f[0] in ("full", "all") and f[1].isdigit():
        rows[f[0]] = f
full, a = rows.get("full", ["-"] * 13), rows.get("all", ["-"] * 13)
print("%-5s %7s %7s %6s %6s %9s %10s %9s %7s %7s  %s" % (
    sys.argv[2], grab(r"campaign wall_s ([\d.]+)"),
    grab(r"from first to last busy sample \([\d.]+ s\) mean ([\d.]+) %"),
    grab(r"time split over [\d.]+ s, (\d+) items"), a[1], a[2], full[6], full[10], a[11],
    a[12], sys.argv[3]))
PY
  tail -40 "$LOG"
}
echo "# label wall_s  busy_%  items  evals sandbox_s fullsamp_s metrics_s  passes   waits  runner options" \
  > "$OUT/suite-summary.txt"
campaign "" "${KB_SUITE_RUNNER_ARGS:-}"
if [ -n "${KB_SUITE_OLD_RUNNER:-}" ]; then
  OLD_ARGS=${KB_SUITE_OLD_ARGS:-}
else
  OLD_ARGS=${KB_SUITE_OLD_ARGS:---metrics every --sample-chunk 1 --fresh full}
fi
[ -n "${KB_SUITE_AB:-}" ] && campaign old "$OLD_ARGS" "${KB_SUITE_OLD_RUNNER:+$PWD/$KB_SUITE_OLD_RUNNER}"
echo "== before/after (busy: nvidia-smi mean from the first to the last busy sample; sandbox_s:"
echo "   evaluations' time in the sandbox; fullsamp_s, metrics_s: the full tier's timed samples"
echo "   and metrics phases; passes: metrics passes run; waits: host waits for timed samples)"
cat "$OUT/suite-summary.txt"
