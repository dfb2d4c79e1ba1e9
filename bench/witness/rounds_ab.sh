#!/usr/bin/env bash
# The witness's rounds by rank (docs/sandbox.md, "Rounds by rank"), measured on this machine's
# host backend: the same host campaign (the first TASKS tasks of examples/suite-host, seeds and
# up to PER_TASK deterministic tune proposals each, ladder compile, smoke, screen, full, the
# campaign's promotion rule; ETA=1: every candidate climbs to full) run by two builds' programs, alternating, REPEAT
# times each: OLD_BIN (every full-tier result witnessed with three rounds) and NEW_BIN (three
# rounds for a claim under the scheduler's mark, one for the others). From each runner's debug
# log: the full-tier items, the witnesses and their rounds ("witness: N round(s)"), the
# runner's time split.
# Prints a table (one row per run: build, wall s, items, full-tier items, witnesses, rounds,
# one-round witnesses, witness seconds where the runner says them) and a final JSON line with
# each build's median wall time and rounds, and the ratio new/old of the medians.
# usage: bench/witness/rounds_ab.sh OLD_BIN NEW_BIN   (env REPEAT 2, TASKS 6, PER_TASK 6, ETA)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
OLD=$1 NEW=$2
REPEAT=${REPEAT:-2} TASKS=${TASKS:-6} PER_TASK=${PER_TASK:-6} ETA=${ETA:-}
PY=${KB_PY:-/usr/bin/python3}
T=$(mktemp -d /tmp/kb-rounds-ab-XXXXXX)
unset KB_REDIS
run() { # LABEL BIN N
  local label=$1 bin=$2 n=$3 d=$T/$1-$3
  mkdir -p "$d"
  "$PY" - "$REPO" "$d" "$TASKS" "$PER_TASK" "$ETA" > "$d/campaign.json" <<'PY'
import json, os, sys
repo, d, tasks, per, eta = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \
    sys.argv[5]
c = json.load(open(os.path.join(repo, "examples/suite-host/campaign.json")))
c["tasks"] = [os.path.normpath(os.path.join(repo, "examples/suite-host", t))
              for t in c["tasks"]][:tasks]
c["id"] = "ab"
c["results_dir"] = os.path.join(d, "results")
c["generators"]["max_per_task"] = per
if eta:
    c.setdefault("search", {})["eta"] = int(eta)
print(json.dumps(c, indent=1))
PY
  local t0 t1
  t0=$(date +%s.%N)
  KB_LOG=debug KB_SANDBOX_DIR=$bin "$bin/kb-launch" --local "$d/campaign.json" \
    > "$d/out.txt" 2> "$d/err.txt"
  t1=$(date +%s.%N)
  "$PY" - "$label" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
    "$d/results/ab/redis/runner-0.log" >> "$T/rows.txt" <<'PY'
import re, sys
label, wall, log = sys.argv[1], float(sys.argv[2]), open(sys.argv[3], errors="replace").read()
rounds = [int(r) for r in re.findall(r"witness: (\d+) round\(s\) of", log)]
full = len(re.findall(r"tier 3 \(full\)", log))
split = re.search(r"time split over [\d.]+ s, (\d+) items.*?(?:witnessing ([\d.]+) s)?", log)
wit = re.search(r"witnessing ([\d.]+) s, (\d+) rounds", log)
print("%s %.1f %s %d %d %d %d %s" % (label, wall, split.group(1) if split else "-", full,
                                     len(rounds), sum(rounds), rounds.count(1),
                                     wit.group(1) if wit else "-"))
PY
}
for n in $(seq 1 "$REPEAT"); do
  run old "$OLD" "$n"
  run new "$NEW" "$n"
done
echo "build  wall_s  items  full_items  witnesses  rounds  one_round  witness_s"
cat "$T/rows.txt"
"$PY" - "$T/rows.txt" "$REPEAT" "$TASKS" "$PER_TASK" "$ETA" <<'PY'
import json, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(label, k):
    v = [float(r[k]) for r in rows if r[0] == label and r[k] != "-"]
    return statistics.median(v) if v else None
out = {"bench": "witness_rounds_ab", "repeat": int(sys.argv[2]), "tasks": int(sys.argv[3]),
       "per_task": int(sys.argv[4]), "eta": sys.argv[5] or "campaign's"}
for label in ("old", "new"):
    out[label] = {"wall_s": med(label, 1), "items": med(label, 2), "full_items": med(label, 3),
                  "witnesses": med(label, 4), "rounds": med(label, 5),
                  "one_round": med(label, 6)}
o, n = out["old"], out["new"]
out["wall_ratio_new_old"] = n["wall_s"] / o["wall_s"] if o["wall_s"] else None
out["rounds_ratio_new_old"] = n["rounds"] / o["rounds"] if o["rounds"] else None
print(json.dumps(out))
PY
[ -n "${KEEP:-}" ] && echo "kept: $T" || rm -rf "$T"
