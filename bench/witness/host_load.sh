#!/usr/bin/env bash
# The host witness under load: how far the runner's clock (the witness) puts honest candidates
# from their own samples, and whether it still rejects a forged clock, while other processes
# load this machine's CPUs.
#
# For each of REPEAT rounds, with HOGS busy-loop processes running, `kb-eval --tiers smoke,full`
# evaluates on the host backend:
#   - task sum (4 Mi elements): its seeds naive and unrolled, and a four-accumulator kernel
#     (tests/fixtures/llm/sum/a_unroll4.c, the archive test's hand-made one);
#   - task row_sum: the catalogue's honest_naive.c and timer_forge.c (which forges the
#     sandbox's clock 40x slow: it must come out rejected, by the check between candidates
#     at its first tier, runner/sandbox/integrity.h, or else by the witness).
# The last tier runs as a campaign's does (the witness after every ok evaluation). From the
# runner's debug lines each witness gives its rounds, the witnessed time and the claim.
#
# Prints a table (one row per witnessed evaluation: task, file, calls, claim, witnessed,
# witnessed/claim, verdict; a forged one rejected before any witness shows 0 calls) and a final JSON line: honest evaluations, how many were rejected
# (false rejections), the ratio's median and maximum over the honest ones, and how many of the
# forged evaluations were rejected.
# usage: bench/witness/host_load.sh [BIN_DIR] (env REPEAT, default 3; HOGS, default 2)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${1:-$REPO/build/bin}
REPEAT=${REPEAT:-3}
HOGS=${HOGS:-2}
PY=${KB_PY:-/usr/bin/python3}
T=$(mktemp -d /tmp/kb-witness-bench-XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT
for _ in $(seq 1 "$HOGS"); do
  (while :; do :; done) &
  PIDS+=($!)
done
export KB_LOG=debug
for r in $(seq 1 "$REPEAT"); do
  "$BIN/kb-eval" -C "$T/cache" --tiers smoke,full --seeds "$REPO/tasks/host/sum" \
    "$REPO/tests/fixtures/llm/sum/a_unroll4.c" > "$T/sum.$r.out" 2> "$T/sum.$r.log" || true
  "$BIN/kb-eval" -C "$T/cache" --tiers smoke,full "$REPO/tasks/host/row_sum" \
    "$REPO/tests/catalogue/host/honest_naive.c" "$REPO/tests/catalogue/host/timer_forge.c" \
    > "$T/row.$r.out" 2> "$T/row.$r.log" || true
done
"$PY" - "$T" "$REPEAT" "$HOGS" << 'PY'
import glob, json, os, re, statistics, sys
t, repeat, hogs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = []
# a witness's last judged line, then the evaluation's verdict line of kb-eval's text output
judged = re.compile(r"task (\S+): witness: (\d+) round\(s\) of (\d+) calls, the candidate "
                    r"(-?[0-9.]+) us a call \(its samples ([0-9.]+) us\)")
for log in sorted(glob.glob(os.path.join(t, "*.log"))):
    out = log[:-4] + ".out"
    lines = [l for l in open(out) if not l.startswith("#") and len(l.split()) > 3]
    # a forged file's verdict at its last tier reached; everything else at the full tier
    verdicts = [l for l in lines if re.search(r"\s(full)\s", l) and "forge" not in l.split()[1]]
    last = {}
    for l in lines:
        if "forge" in l.split()[1]:
            last[l.split()[1]] = l
    verdicts += list(last.values())
    seen = [m.groups() for m in map(judged.search, open(log)) if m]
    # kb-eval prints one line per evaluation; each full-tier one the witness judged (ok, or
    # rejected by it) has one judged line in the log, in the same order
    for line in verdicts:
        v = line.split()
        name, status = v[1], v[3]
        if "forge" in name and "outside its process" not in line:
            # rejected before any witness: the check between candidates (integrity.h)
            rows.append((v[0], name, 0, 0.0, 0.0, status, True))
            continue
        if not (status == "ok" or "outside its process" in line) or not seen:
            continue
        task, rounds, calls, wit, claim = seen.pop(0)
        rows.append((task, name, int(calls), float(claim), float(wit), status, "forge" in name))
print("%-8s %-16s %5s %11s %11s %7s %s" % ("task", "file", "calls", "claimed_us", "witness_us",
                                           "ratio", "verdict"))
for task, name, calls, claim, wit, status, forged in rows:
    print("%-8s %-16s %5d %11.1f %11.1f %7.2f %s" % (task, name, calls, claim, wit,
                                                     wit / claim if claim > 0 else 0, status))
honest = [r for r in rows if not r[6]]
forged = [r for r in rows if r[6]]
ratios = [r[4] / r[3] for r in honest if r[3] > 0]
print(json.dumps({"bench": "witness_host_load", "repeat": repeat, "hogs": hogs,
                  "honest": len(honest),
                  "honest_rejected": sum(r[5] == "rejected" for r in honest),
                  "ratio_median": round(statistics.median(ratios), 3) if ratios else None,
                  "ratio_max": round(max(ratios), 3) if ratios else None,
                  "forged": len(forged),
                  "forged_rejected": sum(r[5] == "rejected" for r in forged)}))
PY
