#!/usr/bin/env bash
# The engine's hardening on the GPU (issue 12, deliverables 2-4), from the repository root after
# bundling, on the device:   BUNDLE=.gpu bash tests/gpu/engine_trust.sh     (outputs under $OUT)
# Every seed of every tasks/cuda/* task at smoke, screen and full through kb-sandbox-cuda with
# KB_LOG=debug, so that each evaluation's phases (fresh samples among them) are logged; then a
# table: the probed memory bandwidth (the sandbox's hello), per tier the evaluations, the ones
# not ok (false rejections: target 0, each listed with its reason), the time in fresh samples
# (draws, oracle runs, compares, their timed calls and control samples) against the
# evaluations' sandbox time, and the largest fresh share of one evaluation.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/gpu/lib.sh
kb_gpu_env
CACHE=$(mktemp -d)
LOG=$OUT/engine-trust.txt
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) commit ${KB_COMMIT:-unknown};" \
    "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
  for t in tasks/cuda/*/; do
    KB_LOG=debug timeout 900 kb-test-eval --backend cuda --cache "$CACHE" --tiers 123 "$t" 2>&1
  done
} > "$LOG" 2>&1
python3 - "$LOG" <<'PY'
import re, sys
bw, rows, pending = None, [], None
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"memory bandwidth ([0-9.]+) GB/s", line)
    if m:
        bw = float(m.group(1))
    m = re.search(r"eval: \d+ call\(s\) per sample, ([0-9.]+) s in the sandbox .*fresh ([0-9.]+)",
                  line)
    if m:
        pending = (float(m.group(1)), float(m.group(2)))
        continue
    m = re.match(r"(\S+)\s+(\S+)\s+(smoke|screen|full)\s+(\S+)\s+median\s+([0-9.]+)", line)
    if m:
        sec, fresh = pending or (0.0, 0.0)
        reason = line.split(" | ", 1)[1].strip() if " | " in line else ""
        rows.append((m.group(1), m.group(2), m.group(3), m.group(4), sec, fresh, reason))
        pending = None
print("probed bandwidth: %s GB/s" % bw)
for tier in ("smoke", "screen", "full"):
    r = [x for x in rows if x[2] == tier]
    bad = [x for x in r if x[3] != "ok"]
    sec = sum(x[4] for x in r); fresh = sum(x[5] for x in r)
    worst = max((x[5] / x[4] for x in r if x[4] > 0), default=0)
    print("%-6s %3d evaluations, %d not ok, sandbox %.2f s, fresh %.2f s (%.0f%%), worst %.0f%%"
          % (tier, len(r), len(bad), sec, fresh, 100 * fresh / sec if sec else 0, 100 * worst))
    for x in bad:
        print("   NOT OK %s %s %s: %s" % (x[0], x[1], x[3], x[6]))
PY
echo "log: $LOG"
