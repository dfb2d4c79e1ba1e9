#!/usr/bin/env bash
# The device side of issue 4 on the GPU machine: the trusted kernels (test_devkern), CUPTI
# (test_cupti), the catalogue (catalogue.sh) and the independent timer against the sandbox's
# full-tier medians (bench/gpu/compare.sh). Builds nothing of kernelbrain there; nvcc builds the
# candidates. From the repository root, after bundling the programs into $BUNDLE (default .gpu):
#   BUNDLE=.gpu bash tests/gpu/devkern.sh
# Writes one file, $OUT/devkern-suite.txt (the device returns few files: each part's output and
# the verdicts as JSON lines, one after the other); prints a table last.
set -uo pipefail
cd "$(dirname "$0")/../.."
FINAL=${OUT:-$(mktemp -d)}
OUT=$(mktemp -d) # the parts, gathered into $FINAL/devkern-suite.txt at the end
export OUT
BUNDLE=${BUNDLE:-.gpu}
# libcupti loads libnvperf_host/target (the Range Profiler) from the library path
export LD_LIBRARY_PATH=$PWD/$BUNDLE/lib:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$PWD/$BUNDLE/bin:/usr/local/cuda/bin:$PATH
export KB_INCLUDE_DIR=$PWD/common/include
hdr() { echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"; }
run() { # name command...
  local name=$1; shift
  { hdr; "$@"; echo "exit $?"; } > "$OUT/$name.txt" 2>&1
}
run devkern test_devkern
run cupti test_cupti
{ hdr; bash tests/gpu/catalogue.sh; echo "exit $?"; } > "$OUT/catalogue-run.txt" 2>&1
{ hdr; bash bench/gpu/compare.sh; echo "exit $?"; } > "$OUT/indep.txt" 2>&1
# KB_DEVKERN_PROBE=0 leaves out the hypotheses about honest_twopass (tests/gpu/timing_probe.sh)
[ "${KB_DEVKERN_PROBE:-1}" = 0 ] ||
  { hdr; BUNDLE=$BUNDLE bash tests/gpu/timing_probe.sh; echo "exit $?"; } > "$OUT/probe.txt" 2>&1
for f in devkern.txt cupti.txt catalogue-run.txt catalogue-verdicts.jsonl \
         catalogue-sandbox-stderr.txt indep.txt indep-results.jsonl indep-experiments.jsonl \
         probe.txt timing-probe.jsonl; do
  [ -f "$OUT/$f" ] && { echo "===== $f"; cat "$OUT/$f"; }
done > "$FINAL/devkern-suite.txt"
echo "== devkern"; grep -E "^(fill|poison|compare|checksum|flush|spin|  |PASS|FAIL|bandwidth)" "$OUT/devkern.txt"
echo "== cupti"; grep -E "^(record|honest|other|legacy|after|outside|metrics|PASS|FAIL)" "$OUT/cupti.txt"
echo "== catalogue"; tail -22 "$OUT/catalogue-run.txt"
echo "== independent timer"; tail -30 "$OUT/indep.txt"
[ -f "$OUT/probe.txt" ] && { echo "== honest_twopass hypotheses (tests/gpu/timing_probe.sh)"; tail -22 "$OUT/probe.txt"; }
